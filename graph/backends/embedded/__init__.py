"""The embedded backend: SQLite, LanceDB and files under a workspace's `.flowbaby/` (the default).

Each module is the counterpart of one in graph.backends.team; `backend.EmbeddedBackend` opens them."""

SCHEMES = ("",)
"""The default: chosen when no database URL is set (graph.backends.backend.backend_class)."""
