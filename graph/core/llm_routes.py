"""How the workspace's LLM settings become litellm's model name, key, endpoint and call arguments:
one mapping for the cognee worker (as cognee's LLM_* variables) and for capture's distillation in
the owning process. Nothing here imports litellm or cognee."""

from __future__ import annotations

import json

from graph.core.settings import LLMSettings

OFFLINE_MODEL = "flowbaby-local/offline-extractor"
"""The litellm custom provider the worker registers for the offline extractor."""

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
