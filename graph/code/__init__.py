"""Memories and the code they name: freshness of references, imports of ADRs and design docs."""
