"""The embedded backend: SQLite, LanceDB and files under a workspace's `.flowbaby/` (the default).

Each module is the counterpart of one in graph.backends.team; graph.backends.backend opens them."""
