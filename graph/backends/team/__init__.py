"""The team backend: one Postgres + pgvector schema per namespace, shared by many servers.

`backend.TeamBackend` opens its stores; psycopg is imported only when one opens."""

SCHEMES = ("postgresql", "postgres")
"""The database URLs it serves (graph.backends.backend.backend_class)."""
