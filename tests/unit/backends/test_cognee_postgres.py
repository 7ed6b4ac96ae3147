"""cognee's settings for the team database: the URLs cognee's pgvector and postgres graph adapters
paste together (user and password unescaped, 1.6.5) still name the right user and password."""

from __future__ import annotations

from urllib.parse import quote

from sqlalchemy.engine import make_url

from graph.backends.team.cognee_databases import cognee_schema, postgres_environment


def test_a_password_with_url_characters_reaches_every_adapter() -> None:
    password = "p@ss/w:rd#%?"
    url = f"postgresql://{quote('team@corp', safe='')}:{quote(password, safe='')}@db.internal:6543/flowbaby"
    env = postgres_environment(url + "?sslmode=verify-full&sslrootcert=/etc/team-ca.pem")
    assert (env["PGSSLMODE"], env["PGSSLROOTCERT"]) == ("verify-full", "/etc/team-ca.pem")
    assert (env["DB_USERNAME"], env["DB_PASSWORD"], env["DB_HOST"], env["DB_PORT"], env["DB_NAME"]) == (
        "team@corp",
        password,
        "db.internal",
        "6543",
        "flowbaby",
    )
    for prefix in ("VECTOR_DB", "GRAPH_DATABASE"):  # the f-string each adapter builds
        built = make_url(
            f"postgresql+asyncpg://{env[f'{prefix}_USERNAME']}:{env[f'{prefix}_PASSWORD']}"
            f"@{env[f'{prefix}_HOST']}:{env[f'{prefix}_PORT']}/{env[f'{prefix}_NAME']}"
        )
        assert (built.username, built.password, built.host, built.port, built.database) == (
            "team@corp",
            password,
            "db.internal",
            6543,
            "flowbaby",
        )
    assert (env["DB_PROVIDER"], env["VECTOR_DB_PROVIDER"], env["GRAPH_DATABASE_PROVIDER"]) == (
        "postgres",
        "pgvector",
        "postgres",
    )


def test_cognee_has_its_own_schema_per_namespace() -> None:
    assert cognee_schema("team-a") == "cognee_team-a"
    assert len(cognee_schema("x" * 48)) <= 63  # Postgres identifiers
