"""Automatic capture: an agent session distilled into a memory, offline (INGEST_CONTRACT.md, hooks)."""
