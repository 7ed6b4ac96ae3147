"""The team backend of the memory store: memory versions, supersession and the operation
ledger in Postgres, one schema per namespace (`flowbaby_<namespace>`), so that no query of one
workspace can name another's rows.

Same behaviour as graph.backends.embedded.memory_store.MemoryStore (the unit tests run over both). Differences that
matter: staging takes a per-topic transaction lock, so two processes staging the same topic get
consecutive versions; any number of servers share a namespace: they claim operations with
FOR UPDATE SKIP LOCKED and hold each claimed one by a lease that the running batch renews, and
an operation whose lease ran out (its server died) is claimed again by any server (see
INGEST_CONTRACT.md 15). Staging checks the namespace's backlog and claiming its running limit under
transaction advisory locks, so the limits hold across servers. Staging, new vectors and status
changes are announced with NOTIFY on the namespace's channel (graph.backends.team.events listens).
Schema migrations are the versioned SQL below, applied at open under a database-wide advisory lock.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from graph.backends.team.pool import acquire_pool, release_pool
from graph.core.contract import (
    BackgroundErrorCode,
    ErrorCode,
    FlowbabyError,
    MemoryFilter,
    MemoryStatus,
    OperationStatus,
    utc_now,
)
from graph.core.memories import (
    FORGET_STEPS,
    KEEP_FINISHED_OPERATIONS,
    BacklogFull,
    ForgetEntry,
    Memory,
    insert_memory_sql,
    memory_uuid,
    memory_values,
    new_operation_id,
    revived_versions,
    row_to_memory,
    row_to_operation,
    scrub_operations,
    usage_summary,
)
from graph.core.memory_query import LIST_INDEXES, Page, page_sql, topics_sql

MIGRATION_LOCK = 0x466C6F77  # "Flow": one database-wide key; migrations take milliseconds
BACKLOG_LOCK = 0x62616279  # "baby", with hashtext(namespace): the backlog check and insert of staging
CLAIM_LOCK = 0x636C6D73  # "clms", with hashtext(namespace): the running-limit check and claim
TOPIC_LOCK = 0x746F7063  # "topc", with hashtext(topic id): staging a topic, per transaction
FOLD_LOCK = 0x666F6C64  # "fold", with hashtext(schema): one fold of lexical_changes at a time (migration 11)
FOLD_EVERY = 256
"""Every this many staged memories, the staging transaction folds the namespace's lexical_changes into
lexical_counts (unless another fold holds the lock), so a lexical search sums about this many
memories' change rows at most beside a word's kept count. A transaction folds this way once: the rows
it deleted stay in the table until it ends, and a second fold would scan them again. One that stages
many memories (an import, a bulk load) folds again as it ends (`SELECT lexical_fold(true)`)."""
CONNECT_TIMEOUT_SEC = 5
MAX_CLAIMS = 3
"""An operation whose lease ran out this many times (every server that took it died) fails with
WORKER_CRASHED instead of being claimed again: it may be what kills them. `repair` queues it again."""
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


class PostgresMemoryStore:
    """MemoryStore's behaviour over the namespace's connection pool (graph.backends.team.pool), shared by
    every server of the namespace. `owner`: a serving process, which claims operations; the graph
    worker child (False) only reads."""

    shared = True

    def __init__(self, url: str, namespace: str, *, owner: bool = True) -> None:
        self.namespace = namespace
        self._url = url
        self._where = describe_url(url)[0]
        self._owner = owner
        self.holder = f"{socket.gethostname()} pid {os.getpid()} {uuid.uuid4().hex[:8]}"
        """Who holds the leases this store claims (one per open store, so a restart is another holder)."""
        conn = connect(url)
        try:
            self.migrated = migrate(conn, namespace)
        finally:
            conn.close()
        self._pool = acquire_pool(url, namespace, self._where, configure_connection(namespace), connect)

    def close(self) -> None:
        release_pool(self._url, self.namespace)

    @contextmanager
    def _cursor(self, *, transaction: bool = False) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        """A pooled connection for one call (DATABASE_BUSY / DATABASE_UNAVAILABLE when there is none)."""
        with self._pool.connection() as conn:
            if transaction:
                with conn.transaction(), conn.cursor() as cur:
                    yield cur
            else:
                with conn.cursor() as cur:
                    yield cur

    # -- staging -----------------------------------------------------------------
    def stage(self, memory: Memory, operation_id: str, *, capacity: int | None = None) -> Memory:
        """Store a new version of the topic, supersede the previous one, queue its operation.
        `capacity`: raise BacklogFull instead when the namespace has that many unfinished operations,
        counted under the namespace's backlog lock so that two servers cannot both pass."""
        with self._cursor(transaction=True) as cur:
            if capacity is not None:
                cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (BACKLOG_LOCK, self.namespace))
                unfinished = cur.execute("SELECT COUNT(*) AS n FROM operations WHERE state IN ('pending', 'running')")
                if int(unfinished.fetchone()["n"]) >= capacity:  # type: ignore[index]
                    raise BacklogFull(capacity)
            cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (TOPIC_LOCK, memory.topic_id))
            row = cur.execute(
                "SELECT memory_id, version FROM memories WHERE topic_id = %s ORDER BY version DESC LIMIT 1",
                (memory.topic_id,),
            ).fetchone()
            memory.version = (row["version"] + 1) if row else 1
            memory.memory_id = memory_uuid(memory.topic_id, memory.version)
            memory.supersedes = row["memory_id"] if row else None
            memory.operation_id = operation_id
            if row:
                cur.execute(
                    "UPDATE memories SET status = %s WHERE topic_id = %s AND version < %s",
                    (MemoryStatus.SUPERSEDED.value, memory.topic_id, memory.version),
                )
            cur.execute(insert_memory_sql("%s"), memory_values(memory, operation_id))
            cur.execute(
                "INSERT INTO operations (operation_id, state, memory_ids, created_at) VALUES (%s, 'pending', %s, %s)",
                (operation_id, json.dumps([memory.memory_id]), utc_now()),
            )
            notify(cur, self.namespace, "queued", [operation_id])
        return memory

    # -- memories ----------------------------------------------------------------
    def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        if not memory_ids:
            return []
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM memories WHERE memory_id = ANY(%s)", (memory_ids,)).fetchall()
        by_id = {row["memory_id"]: row_to_memory(row) for row in rows}
        return [by_id[m] for m in memory_ids if m in by_id]

    def topic_versions(self, topic_id: str) -> list[Memory]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM memories WHERE topic_id = %s ORDER BY version", (topic_id,)).fetchall()
        return [row_to_memory(row) for row in rows]

    def iter_memories(self) -> Iterator[Memory]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM memories ORDER BY staged_at").fetchall()
        return (row_to_memory(row) for row in rows)

    def list_page(self, query: MemoryFilter, page: Page) -> list[Memory]:
        statement, args = page_sql(query, page, "%s", postgres=True)
        with self._cursor() as cur:
            rows = cur.execute(statement.encode(), args).fetchall()
        return [row_to_memory(row) for row in rows]

    def matching_topics(self, query: MemoryFilter) -> list[str]:
        statement, args = topics_sql(query, "%s", postgres=True)
        with self._cursor() as cur:
            rows = cur.execute(statement.encode(), args).fetchall()
        return [row["topic_id"] for row in rows]

    def forget(self, forget_id: str, memory_ids: list[str], steps: tuple[str, ...] = FORGET_STEPS) -> None:
        """As MemoryStore.forget, in one transaction under the topics' staging locks (so a version
        staged meanwhile waits); lexical rows go with the memories (ON DELETE CASCADE), and the word
        counts are folded at once, so no count row names a word only forgotten memories held. Other
        servers hear `forgotten` on the namespace's channel."""
        forgotten = set(memory_ids)
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "INSERT INTO forget_journal (forget_id, memory_ids, pending, created_at) VALUES (%s, %s, %s, %s)",
                (forget_id, json.dumps(memory_ids), json.dumps(list(steps)), utc_now()),
            )
            topics = cur.execute(
                "SELECT memory_id, topic_id, version, status FROM memories WHERE topic_id IN "
                "(SELECT topic_id FROM memories WHERE memory_id = ANY(%s)) ORDER BY topic_id",
                (memory_ids,),
            ).fetchall()
            for topic in sorted({row["topic_id"] for row in topics}):
                cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (TOPIC_LOCK, topic))
            revive = revived_versions(topics, forgotten)
            cur.execute("DELETE FROM memories WHERE memory_id = ANY(%s)", (memory_ids,))
            cur.execute("SELECT lexical_fold(true)")
            if revive:
                cur.execute(
                    "UPDATE memories SET status = %s WHERE memory_id = ANY(%s)", (MemoryStatus.ACTIVE.value, revive)
                )
            updates, drops = scrub_operations(
                cur.execute("SELECT operation_id, state, memory_ids FROM operations").fetchall(), forgotten
            )
            for operation_id, ids in updates:
                cur.execute("UPDATE operations SET memory_ids = %s WHERE operation_id = %s", (ids, operation_id))
            if drops:
                cur.execute("DELETE FROM operations WHERE operation_id = ANY(%s)", (drops,))
            for start in range(0, len(memory_ids), 64):
                notify(cur, self.namespace, "forgotten", memory_ids[start : start + 64])

    def checkpoint(self) -> None:
        """Nothing to do: Postgres keeps no client-side log (see INGEST_CONTRACT.md 20.4)."""

    def forget_journal(self) -> list[ForgetEntry]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM forget_journal ORDER BY seq").fetchall()
        return [ForgetEntry(r["forget_id"], json.loads(r["memory_ids"]), json.loads(r["pending"])) for r in rows]

    def forget_step_done(self, forget_id: str, step: str) -> None:
        with self._cursor(transaction=True) as cur:
            row = cur.execute(
                "SELECT pending FROM forget_journal WHERE forget_id = %s FOR UPDATE", (forget_id,)
            ).fetchone()
            if row is None:
                return
            left = [s for s in json.loads(row["pending"]) if s != step]
            if left:
                cur.execute(
                    "UPDATE forget_journal SET pending = %s WHERE forget_id = %s", (json.dumps(left), forget_id)
                )
            else:
                cur.execute("DELETE FROM forget_journal WHERE forget_id = %s", (forget_id,))

    def memory_states(self) -> dict[str, tuple[str, str]]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT memory_id, status, graph_state FROM memories").fetchall()
        return {row["memory_id"]: (row["status"], row["graph_state"]) for row in rows}

    def set_graph_state(self, memory_ids: list[str], state: str) -> None:
        with self._cursor(transaction=True) as cur:
            cur.execute("UPDATE memories SET graph_state = %s WHERE memory_id = ANY(%s)", (state, memory_ids))

    def set_status(self, memory_id: str, status: MemoryStatus) -> None:
        with self._cursor(transaction=True) as cur:
            cur.execute("UPDATE memories SET status = %s WHERE memory_id = %s", (status.value, memory_id))
            notify(cur, self.namespace, "status", [memory_id], status=status.value)

    def counts(self) -> dict[str, int]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT graph_state, COUNT(*) AS n FROM memories GROUP BY graph_state").fetchall()
        by_state = {row["graph_state"]: int(row["n"]) for row in rows}
        return {"memories": sum(by_state.values()), **{f"graph_{k}": v for k, v in by_state.items()}}

    # -- operation ledger ----------------------------------------------------------
    def operations(self, states: tuple[str, ...] | None = None) -> list[OperationStatus]:
        with self._cursor() as cur:
            if states:
                query = "SELECT * FROM operations WHERE state = ANY(%s) ORDER BY created_at, seq"
                rows = cur.execute(query, (list(states),)).fetchall()
            else:
                rows = cur.execute("SELECT * FROM operations ORDER BY created_at, seq").fetchall()
        return self._with_topics(rows)

    def operation(self, operation_id: str) -> OperationStatus | None:
        with self._cursor() as cur:
            row = cur.execute("SELECT * FROM operations WHERE operation_id = %s", (operation_id,)).fetchone()
        return self._with_topics([row])[0] if row else None

    def _with_topics(self, rows: list[dict[str, Any]]) -> list[OperationStatus]:
        """One query for the topics of every listed operation (a round trip each would be slow here)."""
        ids = [json.loads(row["memory_ids"]) for row in rows]
        topics = {m.memory_id: m.topic_id for m in self.get_memories(sorted({m for op in ids for m in op}))}
        return [
            row_to_operation(row, [topics[m] for m in op if m in topics]) for row, op in zip(rows, ids, strict=True)
        ]

    def count_operations(self, states: tuple[str, ...] = ("pending", "running")) -> int:
        with self._cursor() as cur:
            row = cur.execute("SELECT COUNT(*) AS n FROM operations WHERE state = ANY(%s)", (list(states),)).fetchone()
        return int(row["n"]) if row else 0

    def llm_usage(self) -> dict[str, Any]:
        """LLM work summed over every batch, each batch once (see MemoryStore.llm_usage)."""
        whole = ("llmCalls", "llmFailedCalls", "llmPromptTokens", "llmCompletionTokens")
        fields = (*whole, "llmSec", "llmCostUsd")
        per_batch = ", ".join(f"MAX((metrics::jsonb->>'{f}')::numeric) AS f{i}" for i, f in enumerate(fields))
        totals = ", ".join(
            f"SUM(f{i})::{'bigint' if f in whole else 'float8'} AS {f.lower()}" for i, f in enumerate(fields)
        )
        query = (
            f"SELECT COUNT(*) AS batches, {totals} FROM (SELECT {per_batch} FROM operations "
            "WHERE metrics::jsonb->>'llmCalls' IS NOT NULL "
            "GROUP BY COALESCE(metrics::jsonb->>'batchId', operation_id)) AS per_batch"
        )
        with self._cursor() as cur:
            row = cur.execute(query.encode()).fetchone()
        assert row is not None
        return usage_summary(
            row["batches"],
            row["llmcalls"],
            row["llmfailedcalls"],
            row["llmprompttokens"],
            row["llmcompletiontokens"],
            row["llmsec"],
            row["llmcostusd"],
        )

    def mark_running(self, operation_ids: list[str]) -> None:
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "UPDATE operations SET state='running', started_at=%s, attempts=attempts+1"
                " WHERE operation_id = ANY(%s)",
                (utc_now(), operation_ids),
            )

    def claim(self, limit: int, lease_sec: float) -> list[OperationStatus]:
        """Up to `limit` operations for this server, oldest first: pending ones, and running ones whose
        lease ran out (their server died). Running, attempts counted, leased to this store until
        now + lease_sec. `limit` is the namespace's running limit: operations other servers hold
        under a live lease count against it (checked under the claim lock)."""
        if not self._owner:
            raise RuntimeError("only a serving process claims operations")
        with self._cursor(transaction=True) as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (CLAIM_LOCK, self.namespace))
            given_up = cur.execute(
                "UPDATE operations SET state='failed', finished_at=%s, error_code=%s, lease_until=NULL, error=%s "
                "WHERE state='running' AND lease_until < now() AND attempts >= %s RETURNING operation_id",
                (
                    utc_now(),
                    BackgroundErrorCode.WORKER_CRASHED.value,
                    f"Every server that ran this operation stopped before it ended ({MAX_CLAIMS} times)",
                    MAX_CLAIMS,
                ),
            ).fetchall()
            if given_up:
                cur.execute(
                    "UPDATE memories SET graph_state='failed' WHERE operation_id = ANY(%s) "
                    "AND graph_state != 'indexed'",
                    ([row["operation_id"] for row in given_up],),
                )
            live = cur.execute("SELECT COUNT(*) AS n FROM operations WHERE state='running' AND lease_until >= now()")
            free = limit - int(live.fetchone()["n"])  # type: ignore[index]
            if free <= 0:
                return []
            rows = cur.execute(
                "SELECT operation_id FROM operations WHERE state='pending' "
                "OR (state='running' AND COALESCE(lease_until, '-infinity') < now()) "
                "ORDER BY created_at, seq LIMIT %s FOR UPDATE SKIP LOCKED",
                (free,),
            ).fetchall()
            ids = [row["operation_id"] for row in rows]
            if not ids:
                return []
            cur.execute(
                "UPDATE operations SET state='running', started_at=%s, attempts=attempts+1, claimed_by=%s, "
                "lease_until=now() + make_interval(secs => %s) WHERE operation_id = ANY(%s)",
                (utc_now(), self.holder, lease_sec, ids),
            )
            claimed = cur.execute(
                "SELECT * FROM operations WHERE operation_id = ANY(%s) ORDER BY created_at, seq", (ids,)
            ).fetchall()
        return self._with_topics(claimed)

    def renew(self, operation_ids: list[str], lease_sec: float) -> list[str]:
        """Extend this store's leases; returns the operations it still holds (a server that stalled past
        its lease may find one claimed by another server)."""
        with self._cursor(transaction=True) as cur:
            rows = cur.execute(
                "UPDATE operations SET lease_until = now() + make_interval(secs => %s) "
                "WHERE operation_id = ANY(%s) AND state='running' AND claimed_by=%s RETURNING operation_id",
                (lease_sec, operation_ids, self.holder),
            ).fetchall()
        return [row["operation_id"] for row in rows]

    _NOT_HELD_ELSEWHERE = "NOT (state='running' AND claimed_by IS NOT NULL AND claimed_by <> %s)"
    """A running operation leased to another holder is not this store's to requeue or finish."""

    def requeue(self, operation_ids: list[str], *, refund_attempt: bool = False) -> None:
        """Back to pending: after a worker crash the attempt counts; parked at shutdown it does not."""
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "UPDATE operations SET state='pending', started_at=NULL, attempts=GREATEST(0, attempts-%s), "
                f"claimed_by=NULL, lease_until=NULL WHERE operation_id = ANY(%s) AND {self._NOT_HELD_ELSEWHERE}",
                (1 if refund_attempt else 0, operation_ids, self.holder),
            )
            if cur.rowcount:
                notify(cur, self.namespace, "queued", operation_ids)

    def finish(
        self,
        operation_ids: list[str],
        state: str,
        *,
        error_code: str | None = None,
        error: str | None = None,
        metrics: dict[str, Any] | None = None,
    ) -> None:
        """Close operations and move their memories' graph state in one transaction."""
        graph_state = {"completed": "indexed", "failed": "failed"}.get(state, "pending")
        with self._cursor(transaction=True) as cur:
            closed = cur.execute(
                "UPDATE operations SET state=%s, finished_at=%s, error_code=%s, error=%s, metrics=%s, lease_until=NULL"
                f" WHERE operation_id = ANY(%s) AND {self._NOT_HELD_ELSEWHERE} RETURNING operation_id",
                (state, utc_now(), error_code, error, json.dumps(metrics or {}), operation_ids, self.holder),
            ).fetchall()
            cur.execute(
                "UPDATE memories SET graph_state=%s WHERE operation_id = ANY(%s) AND graph_state != 'indexed'",
                (graph_state, [row["operation_id"] for row in closed]),
            )

    def memories_without_graph(self) -> list[str]:
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT m.memory_id FROM memories m LEFT JOIN operations o ON o.operation_id = m.operation_id "
                "WHERE m.graph_state != 'indexed' AND (o.state IS NULL OR o.state NOT IN ('pending', 'running')) "
                "ORDER BY m.staged_at"
            ).fetchall()
        return [row["memory_id"] for row in rows]

    def queue_operation(self, memory_ids: list[str]) -> str:
        """One new pending operation for these memories (repair)."""
        operation_id = new_operation_id()
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "INSERT INTO operations (operation_id, state, memory_ids, created_at) VALUES (%s, 'pending', %s, %s)",
                (operation_id, json.dumps(memory_ids), utc_now()),
            )
            cur.execute(
                "UPDATE memories SET operation_id=%s, graph_state='pending' WHERE memory_id = ANY(%s)",
                (operation_id, memory_ids),
            )
        return operation_id

    def queue_operations(self, groups: list[list[str]]) -> list[str]:
        """queue_operation for each group, in one transaction."""
        operation_ids = [new_operation_id() for _ in groups]
        now = utc_now()
        with self._cursor(transaction=True) as cur:
            cur.executemany(
                "INSERT INTO operations (operation_id, state, memory_ids, created_at) VALUES (%s, 'pending', %s, %s)",
                [(op, json.dumps(ids), now) for op, ids in zip(operation_ids, groups, strict=True)],
            )
            for op, ids in zip(operation_ids, groups, strict=True):
                cur.execute(
                    "UPDATE memories SET operation_id=%s, graph_state='pending' WHERE memory_id = ANY(%s)", (op, ids)
                )
            if operation_ids:
                notify(cur, self.namespace, "queued", operation_ids[:64])
        return operation_ids

    def recover_interrupted(self) -> list[str]:
        """At start-up: running operations that no server holds by a lease (left by a version without
        leases, or marked running without a claim) go back to pending under the same ids, the attempt
        refunded, as on the embedded store. Leased ones are never touched here: a live lease is another
        server's, and an expired one is claimed again, under the same id, by whichever server claims next."""
        with self._cursor(transaction=True) as cur:
            rows = cur.execute(
                "UPDATE operations SET state='pending', started_at=NULL, attempts=GREATEST(0, attempts-1) "
                "WHERE operation_id IN (SELECT operation_id FROM operations WHERE state='running' "
                "AND lease_until IS NULL ORDER BY seq FOR UPDATE SKIP LOCKED) RETURNING operation_id"
            )
            requeued = [row["operation_id"] for row in rows.fetchall()]
            if requeued:
                notify(cur, self.namespace, "queued", requeued)
        return requeued

    def prune_operations(self, keep: int = KEEP_FINISHED_OPERATIONS) -> int:
        """Drop completed and terminated operations beyond the newest `keep` finished ones."""
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "DELETE FROM operations WHERE state IN ('completed', 'terminated') AND seq NOT IN ("
                "SELECT seq FROM operations WHERE state IN ('completed', 'failed', 'terminated') "
                "ORDER BY seq DESC LIMIT %s)",
                (keep,),
            )
            return cur.rowcount

    def import_memories(self, memories: list[Memory]) -> tuple[list[str], list[str]]:
        """`flowbaby migrate`: insert versions exactly as given (ids, versions, status, timestamps), with
        no operation and graph state pending; a version already here is left alone. Returns
        (inserted ids, ids already present), in the given order."""
        inserted: list[str] = []
        present: list[str] = []
        with self._cursor(transaction=True) as cur:
            for memory in memories:
                cur.execute(insert_memory_sql("%s") + " ON CONFLICT DO NOTHING", memory_values(memory, None))
                (inserted if cur.rowcount else present).append(memory.memory_id)
            cur.execute("SELECT lexical_fold(true)")
        return inserted, present

    def supersede_older(self, topic_ids: list[str]) -> None:
        """As MemoryStore.supersede_older."""
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "UPDATE memories m SET status = %s WHERE m.topic_id = ANY(%s) AND m.status != %s "
                "AND m.version < (SELECT MAX(n.version) FROM memories n WHERE n.topic_id = m.topic_id)",
                (MemoryStatus.SUPERSEDED.value, topic_ids, MemoryStatus.SUPERSEDED.value),
            )

    def unqueued_memories(self) -> list[str]:
        """Versions no operation ever covered: imported ones whose graph build is not queued yet."""
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT memory_id FROM memories WHERE operation_id IS NULL ORDER BY staged_at"
            ).fetchall()
        return [row["memory_id"] for row in rows]
