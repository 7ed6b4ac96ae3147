"""LLM providers through litellm: configuration, deadlines, error codes and usage.

The slow tests run the real route: bridge → cognee worker → cognee → litellm → HTTP →
a loopback OpenAI-compatible server (tests/support/fake_openai.py) → parse → graph. Every
bridge and worker they start refuses non-loopback connections (tests/support/netguard).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

# Before litellm is imported here or by the modules below: otherwise it fetches its price table
# from GitHub at import (3 attempts, in a thread) and the suite reaches beyond loopback.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
import pytest  # noqa: E402

from graph.backends.embedded.memory_store import MemoryStore  # noqa: E402
from graph.cognify.worker.cognee_worker import llm_error_code  # noqa: E402
from graph.cognify.worker.llm_calls import UsageMeter, install_usage_meter, is_transient  # noqa: E402
from graph.core.contract import ErrorCode, FlowbabyError  # noqa: E402
from graph.core.graph_projection import load_projection  # noqa: E402
from graph.core.llm_routes import llm_environment  # noqa: E402
from graph.core.settings import LLMSettings  # noqa: E402
from tests.conftest import summary  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402

NETGUARD = Path(__file__).resolve().parents[1] / "support" / "netguard"


# -- configuration -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            LLMSettings(provider="openai", model="gpt-4o-mini", api_key="sk-1"),
            {"LLM_PROVIDER": "openai", "LLM_MODEL": "openai/gpt-4o-mini", "LLM_API_KEY": "sk-1"},
        ),
        (
            LLMSettings(provider="openai", model="openai/gpt-4o", api_key="sk-1", endpoint="http://10.0.0.5:8000/v1"),
            {
                "LLM_PROVIDER": "openai",
                "LLM_MODEL": "openai/gpt-4o",
                "LLM_API_KEY": "sk-1",
                "LLM_ENDPOINT": "http://10.0.0.5:8000/v1",
            },
        ),
        (
            LLMSettings(provider="custom", model="meta-llama/Llama-3.1-8B", endpoint="http://127.0.0.1:8000/v1"),
            {
                "LLM_PROVIDER": "custom",
                "LLM_MODEL": "openai/meta-llama/Llama-3.1-8B",
                "LLM_API_KEY": "none",
                "LLM_ENDPOINT": "http://127.0.0.1:8000/v1",
            },
        ),
        (
            LLMSettings(provider="anthropic", model="claude-3-5-haiku-latest", api_key="sk-ant"),
            {"LLM_PROVIDER": "anthropic", "LLM_MODEL": "anthropic/claude-3-5-haiku-latest", "LLM_API_KEY": "sk-ant"},
        ),
        (
            LLMSettings(
                provider="azure",
                model="my-gpt4o-deployment",
                api_key="az",
                endpoint="https://x.openai.azure.com",
                api_version="2024-10-21",
            ),
            {
                "LLM_PROVIDER": "azure",
                "LLM_MODEL": "azure/my-gpt4o-deployment",
                "LLM_API_KEY": "az",
                "LLM_ENDPOINT": "https://x.openai.azure.com",
                "LLM_API_VERSION": "2024-10-21",
            },
        ),
        (
            LLMSettings(provider="ollama", model="llama3.1:8b"),
            {
                "LLM_PROVIDER": "ollama",
                "LLM_MODEL": "ollama/llama3.1:8b",
                "LLM_API_KEY": "none",
                "LLM_ENDPOINT": "http://localhost:11434",
            },
        ),
        (
            LLMSettings(provider="ollama", model="ollama_chat/qwen2.5:14b", endpoint="http://127.0.0.1:11434/v1/"),
            {
                "LLM_PROVIDER": "ollama",
                "LLM_MODEL": "ollama_chat/qwen2.5:14b",
                "LLM_API_KEY": "none",
                "LLM_ENDPOINT": "http://127.0.0.1:11434",
            },
        ),
        (
            LLMSettings(provider="", endpoint="http://127.0.0.1:9/v1"),
            {"LLM_PROVIDER": "custom", "LLM_MODEL": "flowbaby-local/offline-extractor", "LLM_API_KEY": "offline"},
        ),
    ],
    ids=["openai", "openai-endpoint", "custom", "anthropic", "azure", "ollama", "ollama-v1-endpoint", "offline"],
)
def test_settings_map_onto_cognee_llm_environment(settings: LLMSettings, expected: dict[str, str]) -> None:
    env = llm_environment(settings, timeout_sec=7.5)
    assert {k: v for k, v in env.items() if k != "LLM_ARGS"} == expected
    assert env["LLM_ARGS"] == '{"timeout": 7.5, "max_retries": 0}'


def test_mapped_model_names_route_in_litellm() -> None:
    """litellm itself resolves each mapped name to the intended provider."""
    for provider, model, route in [
        ("custom", "my-model", "openai"),
        ("openai", "gpt-4o-mini", "openai"),
        ("anthropic", "claude-3-5-haiku-latest", "anthropic"),
        ("azure", "dep", "azure"),
        ("ollama", "llama3.1", "ollama"),
    ]:
        mapped = llm_environment(LLMSettings(provider=provider, model=model, api_key="k"), 1)["LLM_MODEL"]
        assert litellm.get_llm_provider(model=mapped)[1] == route, mapped


@pytest.mark.parametrize(
    ("settings", "needs_key"),
    [
        (LLMSettings(provider="openai", model="gpt-4o-mini"), True),
        (LLMSettings(provider="anthropic", model="claude"), True),
        (LLMSettings(provider="azure", model="dep", endpoint="https://x.openai.azure.com"), True),
        (LLMSettings(provider="custom", model="m", endpoint="https://llm.example.com/v1"), True),
        (LLMSettings(provider="custom", model="m", endpoint="http://127.0.0.1:8000/v1"), False),
        (LLMSettings(provider="openai", model="m", endpoint="http://localhost:1234/v1"), False),
        (LLMSettings(provider="ollama", model="llama3.1"), False),
        (LLMSettings(provider=""), False),
        (LLMSettings(provider="openai", model="gpt-4o-mini", api_key="sk-1"), False),
    ],
)
def test_which_settings_need_a_key(settings: LLMSettings, needs_key: bool) -> None:
    if needs_key:
        with pytest.raises(FlowbabyError) as caught:
            settings.require_key()
        assert caught.value.code is ErrorCode.MISSING_API_KEY
    else:
        settings.require_key()


@pytest.mark.parametrize(
    "env_text",
    [
        "LLM_PROVIDER=anthropic\nLLM_MODEL=claude-3-5-haiku-latest\n",
        "LLM_PROVIDER=azure\nLLM_MODEL=dep\nLLM_ENDPOINT=https://x.openai.azure.com\nLLM_API_VERSION=2024-10-21\n",
        "LLM_PROVIDER=custom\nLLM_MODEL=m\nLLM_ENDPOINT=https://llm.example.com/v1\n",
    ],
)
def test_remote_provider_without_key_stages_nothing(spawn, workspace: Path, env_text: str) -> None:
    (workspace / ".env").write_text(env_text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    client = spawn(workspace, env={**env, "FLOWBABY_TRUSTED_WORKSPACES": str(workspace)})
    reply = client.result("ingestForAgent", summary())
    assert reply["success"] is False and reply["errorCode"] == "MISSING_API_KEY"
    assert client.result("health")["memories"] == 0
    assert client.result("backgroundStatus")["operations"] == []


# -- error classification --------------------------------------------------------------------


class _Wrapper(Exception):
    """Stands in for cognee's pipeline wrapper: the LLM error is its cause."""


def _wrapped(error: BaseException) -> BaseException:
    try:
        try:
            raise error
        except BaseException as inner:
            raise _Wrapper("pipeline run failed") from inner
    except _Wrapper as outer:
        return outer


def test_llm_failures_are_classified_from_the_exception_chain() -> None:
    args = {"llm_provider": "openai", "model": "m"}
    assert llm_error_code(_wrapped(litellm.Timeout("read timed out", **args))) == "LLM_TIMEOUT"
    assert llm_error_code(_wrapped(litellm.RateLimitError("429", **args))) == "LLM_RATE_LIMITED"
    assert llm_error_code(_wrapped(litellm.InternalServerError("500", **args))) == "LLM_ERROR"
    assert llm_error_code(_wrapped(litellm.APIConnectionError("refused", **args))) == "LLM_ERROR"
    assert (
        llm_error_code(ExceptionGroup("tasks", [ValueError("x"), _wrapped(litellm.RateLimitError("429", **args))]))
        == "LLM_RATE_LIMITED"
    )
    assert llm_error_code(_wrapped(ValueError("a bug outside the LLM layer"))) is None


def test_only_transient_failures_are_retried() -> None:
    args = {"llm_provider": "openai", "model": "m"}
    assert is_transient(litellm.RateLimitError("429", **args))
    assert is_transient(litellm.InternalServerError("500", **args))
    assert is_transient(litellm.APIConnectionError("refused", **args))
    assert not is_transient(litellm.Timeout("slow", **args))
    assert not is_transient(litellm.AuthenticationError("bad key", **args))
    assert not is_transient(ValueError("schema"))


# -- usage in the ledger ------------------------------------------------------------------------


def test_usage_totals_count_each_batch_once(tmp_path: Path) -> None:
    from tests.support.fakes import memory as fake_memory

    store = MemoryStore(tmp_path / "m.sqlite")
    ops = []
    for i in range(3):
        memory = fake_memory(
            "", topic_id=f"t{i}", version=0, topic="t", context="c", created="2025-01-01T00:00:00.000Z"
        )
        ops.append(store.stage(memory, f"op_{i}").operation_id)
    shared = {
        "batchId": "batch_a",
        "llmCalls": 4,
        "llmFailedCalls": 1,
        "llmPromptTokens": 100,
        "llmCompletionTokens": 30,
        "llmSec": 1.5,
        "llmCostUsd": None,
    }
    store.finish(ops[:2], "completed", metrics=shared)
    store.finish(
        ops[2:],
        "failed",
        error_code="LLM_RATE_LIMITED",
        error="429",
        metrics={**shared, "batchId": "batch_b", "llmCalls": 2, "llmPromptTokens": 7, "llmCompletionTokens": 0},
    )
    usage = store.llm_usage()
    store.close()
    assert usage == {
        "batches": 2,
        "calls": 6,
        "failedCalls": 2,
        "promptTokens": 107,
        "completionTokens": 30,
        "totalTokens": 137,
        "llmSec": 3.0,
        "costUsd": None,
    }


# -- the real route over HTTP --------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_a_call_cancelled_in_flight_is_still_counted(server: FakeOpenAI) -> None:
    """A failing batch cancels its other calls; one already sent reached (and may be billed by) the
    provider although litellm never ends it, so the meter counts it: the 429 batch of the failure test
    below once read llmCalls 3 against the server's 4 when its second call was cut off in flight."""
    server.mode, server.slow_sec = "slow", 10

    async def cancel_one_in_flight(meter: UsageMeter) -> int:
        call = asyncio.create_task(
            litellm.acompletion(
                model="openai/fake-extractor",
                api_base=server.url,
                api_key="none",
                messages=[{"role": "user", "content": "Which queue did we pick?"}],
            )
        )
        while not server.calls():
            await asyncio.sleep(0.01)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        return (await meter.snapshot()).llmCalls

    callbacks = litellm.callbacks
    try:
        counted = asyncio.run(cancel_one_in_flight(install_usage_meter()))
    finally:
        litellm.callbacks = callbacks
    assert counted == server.calls() == 1


def _guarded_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(NETGUARD), env.get("PYTHONPATH")]))
    env["FLOWBABY_NETGUARD_LOG"] = str(tmp_path / "netguard.log")
    env["FLOWBABY_TRUSTED_WORKSPACES"] = str(tmp_path / "ws")  # the workspace fixture: its .env chooses the LLM
    return {**env, **extra}


def _no_remote_connections(tmp_path: Path) -> None:
    log = tmp_path / "netguard.log"
    assert not log.exists(), log.read_text()


def _entities(workspace: Path) -> dict[str, set[str]]:
    graph = load_projection(workspace / ".flowbaby" / "graph" / "projection.json")
    return {d["name"]: set(d.get("sources", [])) for _, d in graph.nodes(data=True) if d.get("kind") == "entity"}


def _use_server(workspace: Path, server: FakeOpenAI) -> None:
    (workspace / ".env").write_text(f"LLM_PROVIDER=custom\nLLM_MODEL=fake-extractor\nLLM_ENDPOINT={server.url}\n")


@pytest.mark.slow
def test_graph_is_built_through_an_http_llm(spawn, workspace: Path, server: FakeOpenAI, tmp_path: Path) -> None:
    _use_server(workspace, server)
    client = spawn(workspace, env=_guarded_env(tmp_path))
    assert client.result("health")["llm"] == "custom"
    reply = client.result("ingestForAgent", summary())
    notice = client.wait_notification(300)
    assert notice["params"] == {"operationId": reply["operationId"], "status": "completed"}
    status = client.result("backgroundStatus", {"operationId": reply["operationId"]})
    metrics = status["metrics"]
    assert server.calls() >= 2 and {r["model"] for r in server.requests} == {"fake-extractor"}
    assert metrics["llmCalls"] == server.calls() and metrics["llmFailedCalls"] == 0
    assert metrics["llmPromptTokens"] == server.prompt_tokens > 0
    assert metrics["llmCompletionTokens"] == server.completion_tokens > 0
    assert metrics["llmSec"] > 0
    totals = client.result("backgroundStatus")["llmUsage"]
    assert (
        totals["calls"] == server.calls() and totals["totalTokens"] == server.prompt_tokens + server.completion_tokens
    )
    client.close()

    memory_id = reply["ingestion_metrics"]["memoryId"]
    entities = _entities(workspace)
    for name in ("redis", "memcached", "billing/reconcile.py"):
        assert memory_id in entities.get(name, set()), f"{name} missing from {sorted(entities)}"
    _no_remote_connections(tmp_path)


@pytest.mark.slow
def test_offline_provider_never_calls_the_server(spawn, workspace: Path, server: FakeOpenAI, tmp_path: Path) -> None:
    (workspace / ".env").write_text(f"LLM_PROVIDER=offline\nLLM_ENDPOINT={server.url}\n")
    client = spawn(workspace, env=_guarded_env(tmp_path))
    reply = client.result("ingestForAgent", summary())
    assert client.wait_notification(300)["params"]["status"] == "completed"
    metrics = client.result("backgroundStatus", {"operationId": reply["operationId"]})["metrics"]
    assert metrics["llmCalls"] >= 2 and metrics["llmPromptTokens"] == 0  # counted, and free
    assert server.calls() == 0
    assert "redis" in _entities(workspace)
    _no_remote_connections(tmp_path)


RETRY_BACKOFF_SEC = 2.5
"""Longer than the first retry back-off (1 s plus up to 1 s of jitter): a call a failed batch left
asleep in it would reach the server within this time (ci24 counted one the operation did not).
The test checks the server's count against the operations' own at every step, so a late call of one
batch fails the check of a later one; only after the last failure does it wait this long."""


FAILURES = [  # (server mode, expected code, a component only this memory mentions)
    ("garbage", "LLM_ERROR", "Postgres"),
    ("slow", "LLM_TIMEOUT", "Kafka"),
    ("429", "LLM_RATE_LIMITED", "Terraform"),
    ("500", "LLM_ERROR", "Grafana"),
]


@pytest.mark.slow
def test_llm_failures_fail_with_a_code_stay_searchable_and_repair(
    spawn, workspace: Path, server: FakeOpenAI, tmp_path: Path
) -> None:
    _use_server(workspace, server)
    server.slow_sec = 30
    env = _guarded_env(tmp_path, FLOWBABY_LLM_TIMEOUT_SEC="2", FLOWBABY_LLM_RETRIES="1", FLOWBABY_MAX_QUEUED="10")
    client = spawn(workspace, "--rate-limit-per-minute", "0", env=env)
    memory_ids = {}
    counted = server.calls()  # every call the operations' metrics account for so far
    for mode, code, component in FAILURES:
        server.mode = mode
        payload = summary(
            f"llm-{mode}",
            topic=f"{component} rollout",
            context=f"The team adopted {component} for the reporting pipeline.",
            decisions=[f"Run {component} in every region"],
            references=[],
        )
        reply = client.result("ingestForAgent", payload)
        memory_ids[component] = reply["ingestion_metrics"]["memoryId"]
        started = time.monotonic()
        notice = client.wait_notification(120)
        elapsed = time.monotonic() - started
        assert notice["params"] == {"operationId": reply["operationId"], "status": "failed", "errorCode": code}, mode
        status = client.result("backgroundStatus", {"operationId": reply["operationId"]})
        metrics = status["metrics"]
        if mode == FAILURES[-1][0]:
            time.sleep(RETRY_BACKOFF_SEC)  # nothing reaches the provider after the failure
        counted += metrics["llmCalls"]
        # no call beyond the operations' own, this one's or a late one of an earlier failed batch
        assert status["attempts"] == 1 and metrics["llmCalls"] > 0 and server.calls() == counted, status
        # A garbage answer is a successful HTTP call whose content fails validation.
        assert (metrics["llmFailedCalls"] == 0) == (mode == "garbage"), metrics
        if mode == "429":  # one retry within the worker, then the operation fails
            assert metrics["llmCalls"] >= 2
        if mode == "slow":  # the 2 s deadline, not the server's 30 s, ended it
            assert elapsed < 25
        hits = client.result("retrieveForAgent", {"query": f"{component} rollout", "maxResults": 1})["entries"]
        assert hits and hits[0]["topicId"] == f"llm-{mode}" and {"vector", "lexical"} <= set(hits[0]["lanes"])

    server.mode = "good"
    # A later batch builds only its own memory: the failed ones wait for repair, and are
    # neither re-run (and paid for) behind the ledger's back nor able to fail it.
    before = server.calls()
    reply = client.result("ingestForAgent", summary("llm-later", references=[]))
    assert client.wait_notification(300)["params"]["status"] == "completed"
    later = client.result("backgroundStatus", {"operationId": reply["operationId"]})["metrics"]
    assert later["memories"] == 1 and later["llmCalls"] == server.calls() - before
    entities = _entities(workspace)
    assert not any(memory_id in entities.get(c.lower(), set()) for c, memory_id in memory_ids.items())
    assert client.result("indexStatus")["counts"]["withoutGraph"] == len(FAILURES)

    # One memory the model cannot answer for fails alone: the worker retries the repair
    # batch one memory at a time, and the others get their graph.
    server.poison = "Grafana"
    repaired = client.result("repair", {})
    assert repaired["requeuedMemories"] == len(FAILURES)
    notice = client.wait_notification(300)
    assert notice["params"] == {"operationId": repaired["operationId"], "status": "failed", "errorCode": "LLM_ERROR"}
    entities = _entities(workspace)
    built = {c for c, memory_id in memory_ids.items() if memory_id in entities.get(c.lower(), set())}
    assert built == {c for _, _, c in FAILURES} - {"Grafana"}
    assert client.result("indexStatus")["counts"]["withoutGraph"] == 1

    server.poison = None
    repaired = client.result("repair", {})
    assert repaired["requeuedMemories"] == 1
    notice = client.wait_notification(300)
    assert notice["params"] == {"operationId": repaired["operationId"], "status": "completed"}
    assert client.result("indexStatus")["status"] == "ready"
    client.close()
    entities = _entities(workspace)
    for component, memory_id in memory_ids.items():
        assert memory_id in entities.get(component.lower(), set()), f"{component} missing from {sorted(entities)}"
    _no_remote_connections(tmp_path)


@pytest.mark.slow
def test_a_poison_memory_fails_alone_in_a_shared_batch(
    spawn, workspace: Path, server: FakeOpenAI, tmp_path: Path
) -> None:
    _use_server(workspace, server)
    server.poison = "Grafana"
    env = _guarded_env(tmp_path, FLOWBABY_LLM_RETRIES="0")
    first = spawn(workspace, env=env)
    replies = {
        component: first.result(
            "ingestForAgent",
            summary(
                f"shared-{component.lower()}",
                topic=f"{component} rollout",
                references=[],
                context=f"The team adopted {component} for the reporting pipeline.",
            ),
        )
        for component in ("Grafana", "Postgres")
    }
    first.kill()  # both staged; at the next start they run as one batch of two operations

    client = spawn(workspace, env=env)
    ends = {}
    while len(ends) < 2:  # a killed running operation is re-queued under a new id, so go by topic
        params = client.wait_notification(300)["params"]
        status = client.result("backgroundStatus", {"operationId": params["operationId"]})
        ends[status["topicIds"][0]] = status
    assert ends["shared-postgres"]["status"] == "completed"
    assert (ends["shared-grafana"]["status"], ends["shared-grafana"]["errorCode"]) == ("failed", "LLM_ERROR")
    assert ends["shared-postgres"]["metrics"]["batchId"] == ends["shared-grafana"]["metrics"]["batchId"]
    assert ends["shared-postgres"]["metrics"]["batchOperations"] == 2  # they really shared a batch
    assert replies["Postgres"]["ingestion_metrics"]["memoryId"] in _entities(workspace)["postgres"]
    client.close()
