"""The local HTTP API front (FastAPI), over the same service as the bridge."""
