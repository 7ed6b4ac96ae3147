"""cognee configured for one workspace: offline, quiet, with MiniLM and the offline extractor.

Only the background worker process imports this module. Every environment switch
must be set before `import cognee`, because cognee reads its configuration at import.
Each switch below closes a network or home-folder reach listed in docs/cognee.md.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.core.environment import export
from graph.search.embedder import Embedder

if TYPE_CHECKING:
    from graph.cognify.worker.offline_llm import OfflineExtractorLLM
from graph.backends.backend import Backend
from graph.cognify.worker.cognee_state import claim_cognee_folder
from graph.core.llm_routes import llm_environment
from graph.core.settings import Settings
from graph.core.workspace import WorkspacePaths

DATASET = "flowbaby"
NO_VECTORS = "flowbaby-none"
"""cognee's vector store unless FLOWBABY_COGNEE_VECTORS=1: none (see no_vectors)."""


def configure_environment(paths: WorkspacePaths, settings: Settings, backend: Backend) -> str | None:
    """Point every cognee root under .flowbaby/ (its databases where the backend keeps them: the
    namespace's schema on the team backend) and switch off all network reaches; the schema to pin
    cognee's connections to once it is imported (None: its own files)."""
    spec = importlib.util.find_spec("litellm")  # located, not imported
    assert spec is not None and spec.origin is not None, "litellm is a dependency"
    litellm_dir = Path(spec.origin).parent
    claim_cognee_folder(paths, backend)  # a folder a repository shipped is set aside, never read
    tiktoken_dir = litellm_dir / "litellm_core_utils" / "tokenizers"
    env = {
        "TELEMETRY_DISABLED": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # litellm's import loads the first `.env` above its own package in "DEV" mode (its default):
        # one in a project whose virtualenv lives inside it. Settings come from the trusted `.env` only.
        "LITELLM_MODE": "PRODUCTION",
        "TIKTOKEN_CACHE_DIR": str(tiktoken_dir),
        # cognee loads this file over the environment, and searches the cwd's folders for a `.env`
        # when it is unset: it names the empty file claim_cognee_folder just made.
        "COGNEE_ENV_FILE": str(paths.cognee_env),
        "SYSTEM_ROOT_DIRECTORY": str(paths.cognee_system),
        "DATA_ROOT_DIRECTORY": str(paths.cognee_data),
        "CACHE_ROOT_DIRECTORY": str(paths.cognee_cache),
        "COGNEE_LOGS_DIR": str(paths.logs / "cognee"),
        # cognee logs a failed task at every pipeline level, each with a rich traceback of the
        # whole chain: 3-4 s apiece for an LLM timeout here, 25 s per failed batch. The worker
        # prints the final traceback itself.
        "LOG_LEVEL": "CRITICAL",
        "GRAPH_EXTRACTOR": "llm",
        "GLINER_AUTO_INSTALL": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "EMBEDDING_PROVIDER": "flowbaby-minilm",
        "EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        "EMBEDDING_DIMENSIONS": str(Embedder(settings.embedding_model).dimensions),  # read from the model
        "EMBEDDING_MAX_COMPLETION_TOKENS": "254",
        "ENABLE_BACKEND_ACCESS_CONTROL": "false",
        # The worker is already the isolation boundary; in-process databases die with it,
        # so a killed worker can never leave a child holding the graph file's lock.
        "GRAPH_DATABASE_SUBPROCESS_ENABLED": "false",
        "VECTOR_DB_SUBPROCESS_ENABLED": "false",
    }
    env.update(llm_environment(settings.llm, settings.llm_timeout_sec))
    databases, schema = backend.cognee_databases()
    env.update(databases)
    if not settings.cognee_vectors:
        env["VECTOR_DB_PROVIDER"] = NO_VECTORS  # registered by install_no_vectors
    for folder in (paths.cognee_system, paths.cognee_data, paths.cognee_cache, paths.logs / "cognee"):
        folder.mkdir(parents=True, exist_ok=True)
    export(env)
    return schema


def pin_schema(schema: str) -> None:
    """Every SQLAlchemy connection of this process (cognee's relational engine, its alembic
    migrations, pgvector and the postgres graph adapter; flowbaby itself uses psycopg) searches
    the namespace's schema first, so all of cognee's tables are created and read there.

    With access control off, cognee keeps one set of tables per database. Its connect args
    (DATABASE_CONNECT_ARGS) do not reach alembic's engine, and a nested server_settings dict
    there breaks its engine cache (unhashable, 1.6.5); SQLAlchemy's pool "connect" event is the
    documented place to set a search_path. `public` follows, for the pgvector type only."""
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    statement = f'SET SESSION search_path TO "{schema}", public'

    def set_search_path(dbapi_connection: Any, _record: Any) -> None:
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True  # outside a transaction, so a pool reset's rollback keeps it
        cursor = dbapi_connection.cursor()
        cursor.execute(statement)
        cursor.close()
        dbapi_connection.autocommit = autocommit

    event.listen(Pool, "connect", set_search_path, insert=True)
    # The pgvector adapter lists its collections (to untag them when data is deleted) in every
    # schema of the database unless it is pinned to one; cognify and add take this same setting.
    from cognee.context_global_variables import vector_db_config
    from cognee.infrastructure.databases.vector.config import get_vectordb_config

    vector_db_config.set({**get_vectordb_config().to_dict(), "vector_db_schema": schema})


class MiniLMEmbeddingEngine:
    """cognee's EmbeddingEngine protocol over the shared local MiniLM, with a cache:
    cognee embeds the same short texts (entity names, types) many times per run."""

    max_completion_tokens = 254

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._cache: dict[str, list[float]] = {}
        self.tokenizer = embedder.tokenizer
        self.calls = 0

    async def embed_text(self, text: list[str]) -> Any:
        import asyncio

        from cognee.infrastructure.databases.vector.embeddings.EmbeddingEngine import (
            EmbeddingResult,
        )

        self.calls += 1
        missing = list(dict.fromkeys(t for t in text if t not in self._cache))
        if missing:
            vectors = await asyncio.to_thread(self._embedder.encode, missing)
            self._cache.update(zip(missing, vectors, strict=False))
            if len(self._cache) > 50_000:
                self._cache.clear()
                self._cache.update(zip(missing, vectors, strict=False))
        tokens = sum(self.tokenizer.count_tokens(t) for t in text)
        return EmbeddingResult([self._cache[t] for t in text], tokens=tokens)

    def get_vector_size(self) -> int:
        return self._embedder.dimensions

    def get_batch_size(self) -> int:
        return 128

    async def input_limit(self) -> int:
        return self.max_completion_tokens


def install_embedding_engine(embedder: Embedder) -> MiniLMEmbeddingEngine:
    """Replace cognee's engine factory: get_embedding_engine() looks it up at call time."""
    module = importlib.import_module("cognee.infrastructure.databases.vector.embeddings.get_embedding_engine")
    engine = MiniLMEmbeddingEngine(embedder)
    module.create_embedding_engine = lambda *args, **kwargs: engine  # type: ignore[attr-defined]
    return engine


def install_no_vectors() -> None:
    """Register NO_VECTORS in cognee's adapter registry, where community vector stores plug in;
    cognee looks it up when it first builds its vector engine (the first add)."""
    from cognee.infrastructure.databases.vector import use_vector_adapter

    from graph.cognify.worker.no_vectors import NoVectors

    use_vector_adapter(NO_VECTORS, NoVectors)


def install_offline_llm() -> OfflineExtractorLLM:
    """Register the offline extractor as litellm's custom provider `flowbaby-local`."""
    import litellm

    from graph.cognify.worker.offline_llm import OfflineExtractorLLM

    handler = OfflineExtractorLLM()
    litellm.custom_provider_map = [
        entry for entry in litellm.custom_provider_map if entry.get("provider") != "flowbaby-local"
    ] + [{"provider": "flowbaby-local", "custom_handler": handler}]
    litellm.utils.custom_llm_setup()
    return handler
