"""A team namespace's schema: its versioned migrations (append only; applied at open under a
database-wide advisory lock), its name and NOTIFY channel, and the connections that reach it (each
pooled one with the schema first on its search path). Every team store opens through these; the
memory versions and the ledger themselves are graph.backends.team.memory_store.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.memory_query import LIST_INDEXES

MIGRATION_LOCK = 0x466C6F77  # "Flow": one database-wide key; migrations take milliseconds
CONNECT_TIMEOUT_SEC = 5
FOLD_LOCK = 0x666F6C64  # "fold", with hashtext(schema): one fold of lexical_changes at a time (migration 11)
FOLD_EVERY = 256
"""Every this many staged memories, the staging transaction folds the namespace's lexical_changes into
lexical_counts (unless another fold holds the lock), so a lexical search sums about this many
memories' change rows at most beside a word's kept count. A transaction folds this way once: the rows
it deleted stay in the table until it ends, and a second fold would scan them again. One that stages
many memories (an import, a bulk load) folds again as it ends (`SELECT lexical_fold(true)`)."""
EF_SEARCH = 200
"""hnsw.ef_search at least this (pgvector's default, 40, found 74% of the exact top 10 on random
vectors here; 200 found all); graph.backends.team.vectors raises it to a larger limit, up to pgvector's 1000."""

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "memory versions and the operation ledger",
        """
        CREATE TABLE memories (
            memory_id TEXT PRIMARY KEY,
            topic_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            status TEXT NOT NULL,
            topic TEXT NOT NULL,
            context TEXT NOT NULL,
            decisions TEXT NOT NULL,
            rationale TEXT NOT NULL,
            open_questions TEXT NOT NULL,
            next_steps TEXT NOT NULL,
            refs TEXT NOT NULL,
            time_scope TEXT,
            agent_name TEXT,
            session_id TEXT,
            plan_id TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            staged_at TEXT NOT NULL,
            char_count INTEGER NOT NULL,
            graph_state TEXT NOT NULL DEFAULT 'pending',
            operation_id TEXT,
            UNIQUE (topic_id, version)
        );
        CREATE INDEX memories_graph_state ON memories (graph_state);
        CREATE INDEX memories_operation ON memories (operation_id);
        CREATE INDEX memories_staged ON memories (staged_at);
        CREATE TABLE operations (
            seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
            operation_id TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            memory_ids TEXT NOT NULL,
            created_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT,
            error_code TEXT,
            error TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            metrics TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX operations_state ON operations (state);
        """,
    ),
    (
        2,
        "memory chunk vectors (pgvector, HNSW on inner product; the bundled MiniLM's 384 dimensions)",
        """
        CREATE TABLE memory_chunks (
            memory_id TEXT NOT NULL,
            topic_id TEXT NOT NULL,
            field TEXT NOT NULL,
            chunk_index INTEGER NOT NULL,
            text TEXT NOT NULL,
            embedding vector(384) NOT NULL,
            PRIMARY KEY (memory_id, chunk_index)
        );
        CREATE INDEX memory_chunks_hnsw ON memory_chunks USING hnsw (embedding vector_ip_ops);
        """,
    ),
    (
        3,
        "operation leases (many servers per namespace), chunk arrival times, retrieval starts",
        """
        ALTER TABLE operations ADD COLUMN claimed_by TEXT, ADD COLUMN lease_until TIMESTAMPTZ;
        CREATE INDEX operations_claimable ON operations (state, lease_until);
        ALTER TABLE memory_chunks ADD COLUMN added_at TIMESTAMPTZ NOT NULL DEFAULT now();
        CREATE INDEX memory_chunks_added ON memory_chunks (added_at);
        CREATE TABLE retrieval_starts (started_at TIMESTAMPTZ NOT NULL);
        CREATE INDEX retrieval_starts_at ON retrieval_starts (started_at);
        """,
    ),
    (
        4,
        "the audit log, with the user of the request's token (graph.backends.team.audit)",
        """
        CREATE TABLE audit_log (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at TEXT NOT NULL,
            command TEXT NOT NULL,
            user_name TEXT,
            agent_name TEXT,
            topic_digest TEXT,
            result TEXT NOT NULL,
            error_code TEXT,
            duration_ms DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX audit_log_at ON audit_log (at);
        CREATE INDEX audit_log_user ON audit_log (user_name);
        """,
    ),
    (
        5,
        "lexical search: each memory's words as a GIN-indexed tsvector and as postings, kept by a trigger",
        """
        CREATE FUNCTION lexical_vector(body TEXT) RETURNS tsvector
            LANGUAGE sql IMMUTABLE PARALLEL SAFE
            RETURN to_tsvector('pg_catalog.english'::regconfig, regexp_replace(body, '[^[:alnum:]]+', ' ', 'g'));
        CREATE TABLE memory_lexemes (
            memory_id TEXT PRIMARY KEY REFERENCES memories ON DELETE CASCADE,
            doc BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
            lexemes tsvector NOT NULL,
            length INTEGER NOT NULL
        );
        CREATE INDEX memory_lexemes_gin ON memory_lexemes USING gin (lexemes);
        CREATE TABLE memory_terms (
            lexeme TEXT NOT NULL,
            doc BIGINT NOT NULL REFERENCES memory_lexemes (doc) ON DELETE CASCADE,
            tf INTEGER NOT NULL,
            length INTEGER NOT NULL,
            PRIMARY KEY (lexeme, doc) INCLUDE (tf, length)
        );
        CREATE INDEX memory_terms_doc ON memory_terms (doc);
        CREATE FUNCTION memory_lexemes_keep() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        DECLARE
            words tsvector := lexical_vector(concat_ws(' ', NEW.topic, NEW.context, (
                SELECT string_agg(item, ' ') FROM jsonb_array_elements_text(
                    NEW.decisions::jsonb || NEW.rationale::jsonb || NEW.open_questions::jsonb
                    || NEW.next_steps::jsonb || NEW.refs::jsonb) AS item)));
            total INTEGER := (SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest(words));
            added BIGINT;
        BEGIN
            DELETE FROM memory_lexemes WHERE memory_id = NEW.memory_id;
            INSERT INTO memory_lexemes (memory_id, lexemes, length) VALUES (NEW.memory_id, words, total)
                RETURNING doc INTO added;
            INSERT INTO memory_terms SELECT lexeme, added, array_length(positions, 1), total FROM unnest(words);
            RETURN NULL;
        END $$;
        CREATE TRIGGER memory_lexemes_keep AFTER INSERT OR UPDATE OF topic, context, decisions, rationale,
            open_questions, next_steps, refs ON memories FOR EACH ROW EXECUTE FUNCTION memory_lexemes_keep();
        UPDATE memories SET topic = topic;
        """,
    ),
    (
        6,
        "session memory: imported sessions, their chunks, and chunk vectors (pgvector, the encoder's size)",
        """
        CREATE TABLE session_records (
            key TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            session_id TEXT NOT NULL,
            directory TEXT NOT NULL,
            title TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            watermark TEXT NOT NULL,
            imported_at TEXT NOT NULL
        );
        CREATE INDEX session_records_session ON session_records (session_id);
        CREATE TABLE session_chunks (
            embedding_id TEXT PRIMARY KEY,
            session_key TEXT NOT NULL,
            message_id TEXT NOT NULL,
            chunk_index INTEGER NOT NULL,
            ord BIGINT NOT NULL,
            role TEXT NOT NULL,
            created_ms BIGINT NOT NULL,
            text TEXT NOT NULL
        );
        CREATE INDEX session_chunks_order ON session_chunks (session_key, ord, message_id, chunk_index);
        CREATE INDEX session_chunks_message ON session_chunks (session_key, message_id);
        CREATE TABLE session_vectors (
            embedding_id TEXT PRIMARY KEY,
            session_key TEXT NOT NULL,
            embedding vector NOT NULL
        );
        CREATE INDEX session_vectors_session ON session_vectors (session_key);
        CREATE TABLE session_vector_model (
            only_row BOOLEAN PRIMARY KEY DEFAULT true CHECK (only_row),
            dimensions INTEGER NOT NULL,
            variant TEXT NOT NULL DEFAULT ''
        );
        """,
    ),
    (
        7,
        "the graph projection shared by every server on the namespace (one row, a new version per save)",
        """
        CREATE TABLE graph_projection (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            version BIGINT NOT NULL,
            saved_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            saved_by TEXT NOT NULL,
            data BYTEA NOT NULL
        );
        """,
    ),
    (
        8,
        "the git branch and commit each memory was made on",
        """
        ALTER TABLE memories ADD COLUMN git_branch TEXT, ADD COLUMN git_commit TEXT;
        """,
    ),
    (
        9,
        "memory control: listMemories' keyset pages (graph.core.memory_query), the forget journal, "
        "the audit log's redaction count",
        ";\n".join(LIST_INDEXES)
        + ';\nCREATE INDEX memories_topic_bytes ON memories (topic_id COLLATE "C");\n'
        + "CREATE TABLE forget_journal (forget_id TEXT PRIMARY KEY, memory_ids TEXT NOT NULL, pending TEXT NOT NULL, "
        + "created_at TEXT NOT NULL, seq BIGINT GENERATED ALWAYS AS IDENTITY);\n"
        + "ALTER TABLE audit_log ADD COLUMN redacted INTEGER;",
    ),
    (
        10,
        "the graph lane's records beside the projection, cleared by any save that does not write them",
        """
        ALTER TABLE graph_projection ADD COLUMN lane BYTEA, ADD COLUMN lane_version BIGINT;
        CREATE FUNCTION graph_projection_lane_guard() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.lane_version IS DISTINCT FROM NEW.version THEN
                NEW.lane := NULL;
                NEW.lane_version := NULL;
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER graph_projection_lane_guard BEFORE INSERT OR UPDATE ON graph_projection
            FOR EACH ROW EXECUTE FUNCTION graph_projection_lane_guard();
        """,
    ),
    (
        11,
        "the lexical lane's corpus statistics kept by the database: each word's memory count, and the totals; "
        "memory ids by lexical number from the index alone",
        f"""
        CREATE TABLE lexical_counts (lexeme TEXT PRIMARY KEY, df BIGINT NOT NULL, length BIGINT NOT NULL);
        CREATE TABLE lexical_changes (lexeme TEXT NOT NULL, df INTEGER NOT NULL, length BIGINT NOT NULL);
        CREATE INDEX lexical_changes_lexeme ON lexical_changes (lexeme);
        CREATE UNIQUE INDEX memory_lexemes_doc_id ON memory_lexemes (doc) INCLUDE (memory_id);
        CREATE FUNCTION lexical_fold(wait BOOLEAN) RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        DECLARE
            emptied TEXT[];
        BEGIN
            IF wait THEN
                PERFORM pg_advisory_xact_lock({FOLD_LOCK}, hashtext(current_schema()));
            ELSIF NOT pg_try_advisory_xact_lock({FOLD_LOCK}, hashtext(current_schema())) THEN
                RETURN;
            END IF;
            WITH moved AS (DELETE FROM lexical_changes RETURNING lexeme, df, length),
            kept AS (
                INSERT INTO lexical_counts AS c SELECT lexeme, sum(df), sum(length) FROM moved GROUP BY lexeme
                ON CONFLICT (lexeme) DO UPDATE SET df = c.df + EXCLUDED.df, length = c.length + EXCLUDED.length
                RETURNING c.lexeme, c.df
            )
            SELECT array_agg(lexeme) INTO emptied FROM kept WHERE df = 0;
            DELETE FROM lexical_counts WHERE lexeme = ANY(emptied);
            PERFORM set_config('flowbaby.lexical_folded', txid_current()::text, true);
        END $$;
        CREATE FUNCTION lexical_counts_change() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO lexical_changes SELECT lexeme, 1, 0 FROM unnest(NEW.lexemes)
                    UNION ALL SELECT '', 1, NEW.length;
                IF NEW.doc % {FOLD_EVERY} = 0
                    AND current_setting('flowbaby.lexical_folded', true) IS DISTINCT FROM txid_current()::text THEN
                    PERFORM lexical_fold(false);
                END IF;
            ELSE
                INSERT INTO lexical_changes SELECT lexeme, -1, 0 FROM unnest(OLD.lexemes)
                    UNION ALL SELECT '', -1, -OLD.length;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER lexical_counts_change AFTER INSERT OR DELETE ON memory_lexemes
            FOR EACH ROW EXECUTE FUNCTION lexical_counts_change();
        INSERT INTO lexical_counts SELECT lexeme, count(*), 0 FROM memory_terms GROUP BY lexeme;
        INSERT INTO lexical_counts SELECT '', count(*), sum(length) FROM memory_lexemes HAVING count(*) > 0;
        """,
    ),
    (
        12,
        "the reconcile decision log, shared by the namespace's servers (graph.backends.team.decision_log)",
        """
        CREATE TABLE reconcile_log (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, entry_id TEXT NOT NULL,
            record TEXT NOT NULL);
        CREATE INDEX reconcile_log_entry ON reconcile_log (entry_id);
        """,
    ),
    (
        13,
        "who wrote each memory (person, agent, capture, import) and the project it came from",
        """
        ALTER TABLE memories ADD COLUMN written_by TEXT, ADD COLUMN written_in TEXT;
        """,
    ),
]
"""(version, name, SQL) in order. Append only: an applied migration is never edited."""


def schema_name(namespace: str) -> str:
    return f"flowbaby_{namespace}"


def channel_name(namespace: str) -> str:
    """The namespace's LISTEN/NOTIFY channel (an identifier, like its schema)."""
    return f"flowbaby_{namespace}"


def notify(cur: psycopg.Cursor[Any], namespace: str, kind: str, ids: list[str], **extra: str) -> None:
    """Announce a change to the namespace's other servers; inside a transaction it is sent at
    commit (and not at all on rollback). Payloads stay far below NOTIFY's 8000 bytes: callers
    send at most EMBED_BATCH (64) ids of 36 characters."""
    payload = json.dumps({"kind": kind, "ids": ids, "pid": os.getpid(), **extra})
    cur.execute("SELECT pg_notify(%s, %s)", (channel_name(namespace), payload))


def describe_url(url: str) -> tuple[str, str]:
    """(host:port/database, user) of a URL for messages; never the password."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(unparsable URL)", ""
    host = str(info.get("host") or "localhost")
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or ''}", str(info.get("user") or "")


def connect(url: str) -> psycopg.Connection[dict[str, Any]]:
    """An autocommit connection, or a FlowbabyError that names the cause (never the password)."""
    where, user = describe_url(url)
    try:
        return psycopg.connect(
            url,
            autocommit=True,
            row_factory=dict_row,
            connect_timeout=CONNECT_TIMEOUT_SEC,
            application_name=f"flowbaby {socket.gethostname()} pid {os.getpid()}",
        )
    except psycopg.OperationalError as exc:
        text = str(exc)
        if "password authentication failed" in text or "no password supplied" in text:
            cause = f'the server rejected the password of user "{user}"'
        elif "does not exist" in text and "database" in text:
            cause = "the database does not exist"
        elif "Connection refused" in text or "timeout expired" in text or "could not translate host" in text:
            cause = "no server answers there (is it running, and is the host and port right?)"
        else:
            cause = text.strip().splitlines()[-1] if text.strip() else type(exc).__name__
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR, f"Cannot connect to the team database {where}: {cause}", database=where
        ) from None


def require_pgvector(conn: psycopg.Connection[Any], where: str) -> None:
    """The team backend keeps vectors in pgvector; a database without it is refused up front."""
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except (psycopg.errors.FeatureNotSupported, psycopg.errors.UndefinedFile) as exc:
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            f"The team database {where} has no pgvector extension ({str(exc).strip().splitlines()[0]}): "
            "install pgvector on the server (e.g. the postgresql-18-pgvector package), then start again",
        ) from None
    except psycopg.errors.InsufficientPrivilege:
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            f"The team database {where} has no pgvector extension and this user may not create it: "
            "ask its administrator to run CREATE EXTENSION vector in that database",
        ) from None


def migrate(conn: psycopg.Connection[Any], namespace: str) -> list[int]:
    """Bring the namespace's schema to the newest version (pgvector first); returns the versions applied here.
    Two processes starting together: the second waits on the lock, then finds nothing to do."""
    schema = sql.Identifier(schema_name(namespace))
    applied_here: list[int] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        require_pgvector(conn, describe_url(conn.info.dsn)[0])
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {}.schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), applied_by TEXT NOT NULL)"
            ).format(schema)
        )
        done = {
            row["version"] for row in conn.execute(sql.SQL("SELECT version FROM {}.schema_migrations").format(schema))
        }
        for version, name, statements in MIGRATIONS:
            if version in done:
                continue
            with conn.transaction():
                conn.execute(sql.SQL("SET LOCAL search_path TO {}, public").format(schema))
                conn.execute(statements.encode())
                conn.execute(
                    sql.SQL("INSERT INTO {}.schema_migrations (version, name, applied_by) VALUES (%s, %s, %s)").format(
                        schema
                    ),
                    (version, name, f"{socket.gethostname()} pid {os.getpid()}"),
                )
            applied_here.append(version)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return applied_here


def configure_connection(namespace: str) -> Callable[[psycopg.Connection[Any]], None]:
    """What every pooled connection of a namespace gets once: its schema first on the search
    path, and pgvector's HNSW breadth (graph.backends.team.vectors raises it per query when asked)."""

    def configure(conn: psycopg.Connection[Any]) -> None:
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema_name(namespace))))
        conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(EF_SEARCH),))

    return configure
