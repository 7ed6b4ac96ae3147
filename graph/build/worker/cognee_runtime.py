"""cognee configured for one workspace: offline, quiet, with MiniLM and the offline extractor.

Only the background worker process imports this module. Every environment switch
must be set before `import cognee`, because cognee reads its configuration at import.
Each switch below closes a network or home-folder reach listed in docs/cognee.md.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.search.embedder import Embedder

if TYPE_CHECKING:
    from graph.build.worker.offline_llm import OfflineExtractorLLM
from graph.core.settings import LLMSettings, Settings
from graph.core.workspace import WorkspacePaths

DATASET = "flowbaby"
OFFLINE_MODEL = "flowbaby-local/offline-extractor"


def configure_environment(paths: WorkspacePaths, settings: Settings) -> None:
    """Point every cognee root under .flowbaby/ and switch off all network reaches."""
    spec = importlib.util.find_spec("litellm")  # located, not imported
    assert spec is not None and spec.origin is not None, "litellm is a dependency"
    litellm_dir = Path(spec.origin).parent
    paths.cognee_env.parent.mkdir(parents=True, exist_ok=True)
    paths.cognee_env.touch()
    tiktoken_dir = litellm_dir / "litellm_core_utils" / "tokenizers"
    env = {
        "TELEMETRY_DISABLED": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TIKTOKEN_CACHE_DIR": str(tiktoken_dir),
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
    for folder in (paths.cognee_system, paths.cognee_data, paths.cognee_cache, paths.logs / "cognee"):
        folder.mkdir(parents=True, exist_ok=True)
    os.environ.update(env)


LITELLM_PREFIXES: dict[str, tuple[str, ...]] = {
    "openai": ("openai/",),
    "custom": ("openai/",),  # any OpenAI-compatible server: litellm's openai route plus api_base
    "anthropic": ("anthropic/",),
    "azure": ("azure/", "azure_ai/"),
    "ollama": ("ollama/", "ollama_chat/"),
}
"""litellm routes on the model name's prefix; cognee 1.6.5 adds one only for some providers
(get_native_client._qualify_model) and never for custom, so every name is qualified here."""

OLLAMA_ENDPOINT = "http://localhost:11434"


def litellm_model(provider: str, model: str) -> str:
    """`model` with the litellm prefix its provider needs, unless it already has one."""
    prefixes = LITELLM_PREFIXES.get(provider)
    if not prefixes or model.startswith(prefixes):
        return model
    return prefixes[0] + model


def llm_environment(llm: LLMSettings, timeout_sec: float) -> dict[str, str]:
    """cognee's LLM_* variables for the workspace's LLM settings.

    Every request gets `timeout_sec` and no hidden retries in the OpenAI SDK (its default
    is 2, with back-off), so the worker's own bounded policy is the only retry layer.
    """
    args = {"timeout": timeout_sec, "max_retries": 0}
    if llm.offline:
        env = {"LLM_PROVIDER": "custom", "LLM_MODEL": OFFLINE_MODEL, "LLM_API_KEY": "offline"}
    else:
        # cognee refuses an empty key even for keyless servers; litellm sends it as is.
        env = {
            "LLM_PROVIDER": llm.provider,
            "LLM_MODEL": litellm_model(llm.provider, llm.model),
            "LLM_API_KEY": llm.api_key or "none",
        }
        endpoint = llm.endpoint
        if llm.provider == "ollama":
            # litellm's ollama route wants the server root; cognee wants model, endpoint
            # and key all set (LLMConfig.ensure_env_vars_for_ollama).
            endpoint = (endpoint or OLLAMA_ENDPOINT).rstrip("/").removesuffix("/v1")
        if endpoint:
            env["LLM_ENDPOINT"] = endpoint
        if llm.api_version:
            env["LLM_API_VERSION"] = llm.api_version
    env["LLM_ARGS"] = json.dumps(args)
    return env


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


def install_offline_llm() -> OfflineExtractorLLM:
    """Register the offline extractor as litellm's custom provider `flowbaby-local`."""
    import litellm

    from graph.build.worker.offline_llm import OfflineExtractorLLM

    handler = OfflineExtractorLLM()
    litellm.custom_provider_map = [
        entry for entry in litellm.custom_provider_map if entry.get("provider") != "flowbaby-local"
    ] + [{"provider": "flowbaby-local", "custom_handler": handler}]
    litellm.utils.custom_llm_setup()
    return handler
