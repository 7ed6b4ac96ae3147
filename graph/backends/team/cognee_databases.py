"""Where the graph worker's cognee keeps a team namespace's data: its relational tables, pgvector
collections and postgres graph, all in one schema of the team database beside flowbaby's own
(graph.backends.team.backend.TeamBackend.cognee_databases; the worker pins its connections there).
No cognee import: this only names the schema and writes cognee's settings."""

from __future__ import annotations


def cognee_schema(namespace: str) -> str:
    """The Postgres schema that holds all of one namespace's cognee data (relational, vectors, graph).
    Apart from flowbaby's own `flowbaby_<namespace>`: cognee's tables (users, data, graph_node, ...)
    and its alembic history are its own, and `flowbaby_` + a namespace could name another namespace."""
    return f"cognee_{namespace}"


def postgres_environment(url: str) -> dict[str, str]:
    """cognee's relational (DB_*), pgvector (VECTOR_DB_*) and postgres graph (GRAPH_DATABASE_*)
    settings for the team database. The graph and vector adapters paste user and password into
    a URL unescaped, so those go in quoted; TLS settings of the URL go in libpq's PGSSL* variables,
    which asyncpg honours. `pin_schema` then keeps all three in one schema."""
    from urllib.parse import quote

    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(url)
    host, port = str(info.get("host") or "localhost"), str(info.get("port") or 5432)
    user, password = str(info.get("user") or ""), str(info.get("password") or "")
    dbname = str(info.get("dbname") or user)
    remote = {"HOST": host, "PORT": port, "USERNAME": quote(user, safe=""), "NAME": dbname}
    # asyncpg reads TLS settings from libpq's variables when a connection names none (alembic's engine has none)
    tls = {
        f"PG{key.upper()}": str(info[key]) for key in ("sslmode", "sslrootcert", "sslcert", "sslkey") if info.get(key)
    }
    return {
        **tls,
        "DB_PROVIDER": "postgres",
        "DB_HOST": host,
        "DB_PORT": port,
        "DB_USERNAME": user,
        "DB_PASSWORD": password,
        "DB_NAME": dbname,
        "VECTOR_DB_PROVIDER": "pgvector",
        **{f"VECTOR_DB_{key}": value for key, value in remote.items()},
        "VECTOR_DB_PASSWORD": quote(password, safe=""),
        "GRAPH_DATABASE_PROVIDER": "postgres",
        **{f"GRAPH_DATABASE_{key}": value for key, value in remote.items()},
        "GRAPH_DATABASE_PASSWORD": quote(password, safe=""),
    }


def create_cognee_schema(url: str, schema: str) -> None:
    """cognee creates its tables but not the schema its search_path names."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
