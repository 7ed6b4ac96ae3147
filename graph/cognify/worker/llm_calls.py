"""LLM calls inside the cognee worker: a bounded retry policy and a usage meter.

Only the worker imports this module (it imports litellm and cognee). cognee 1.6.5 retries
every failed structured-output call until at least 240 s have passed
(infrastructure/llm/retry_config.py), so a hung or rate-limiting provider would hold a
batch for minutes; the policy below replaces that with a few quick attempts. The meter
is a litellm callback, so it sees every completion: the offline provider's and a real
server's alike.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import litellm
from litellm.integrations.custom_logger import CustomLogger

RETRY_WAIT_MAX_SEC = 10.0


def is_transient(error: BaseException) -> bool:
    """Worth another attempt: rate limits, server errors and refused connections. A request
    that ran into its deadline is not retried (that would multiply the deadline), and
    neither is an answer that failed validation (cognee already asked again, with the
    validation error, in its JSON fallback)."""
    if isinstance(error, litellm.Timeout):
        return False
    return isinstance(
        error,
        (
            litellm.RateLimitError,
            litellm.InternalServerError,
            litellm.ServiceUnavailableError,
            litellm.BadGatewayError,
            litellm.APIConnectionError,
        ),
    )


def install_retry_policy(retries: int) -> None:
    """Bound cognee's retry around every structured-output call: `retries` more attempts
    after a transient failure, with jittered back-off of 1 s doubling up to 10 s.

    The tenacity decorator keeps its policy on the wrapped function (`.retry`) and copies it
    on each call, so changing it here covers every later call."""
    from cognee.infrastructure.llm.retry_config import should_retry_llm_exception
    from cognee.infrastructure.llm.structured_output_framework.litellm_native.native_adapter import (
        NativeLiteLLMAdapter,
    )
    from tenacity import retry_if_exception, stop_after_attempt, wait_exponential_jitter

    policy = NativeLiteLLMAdapter.acreate_structured_output.retry
    policy.stop = stop_after_attempt(retries + 1)
    policy.wait = wait_exponential_jitter(max=RETRY_WAIT_MAX_SEC)
    # cognee's own predicate keeps quota, billing and budget exhaustion terminal.
    policy.retry = retry_if_exception(lambda error: is_transient(error) and should_retry_llm_exception(error))


@dataclass
class LLMUsage:
    """LLM work of one batch, as the operator sees it in backgroundStatus."""

    llmCalls: int = 0
    llmFailedCalls: int = 0
    llmPromptTokens: int = 0
    llmCompletionTokens: int = 0
    llmSec: float = 0.0
    llmCostUsd: float | None = None
    """litellm's price for the calls it has a price for; null when it knows none."""

    def minus(self, before: LLMUsage) -> dict[str, Any]:
        cost = None
        if self.llmCostUsd is not None:
            cost = round(self.llmCostUsd - (before.llmCostUsd or 0.0), 6)
        return {
            "llmCalls": self.llmCalls - before.llmCalls,
            "llmFailedCalls": self.llmFailedCalls - before.llmFailedCalls,
            "llmPromptTokens": self.llmPromptTokens - before.llmPromptTokens,
            "llmCompletionTokens": self.llmCompletionTokens - before.llmCompletionTokens,
            "llmSec": round(self.llmSec - before.llmSec, 3),
            "llmCostUsd": cost,
        }


class UsageMeter(CustomLogger):
    """Counts every litellm completion, its tokens from the response's `usage`, and its duration.

    A call counts once it is sent (litellm's pre-call hook), not only when it ends: a batch that fails
    cancels its other calls, and one cancelled in flight never reaches a success or failure hook,
    although the provider received (and may bill) it. Call ids keep a call that shows up in several
    hooks, or only in an end hook (a custom provider's), at one."""

    def __init__(self) -> None:
        super().__init__()
        self.total = LLMUsage()
        self._call_ids: set[str] = set()

    def _seen(self, kwargs: dict[str, Any]) -> None:
        call_id = kwargs.get("litellm_call_id")
        if call_id is None or call_id not in self._call_ids:
            self.total.llmCalls += 1
            if call_id is not None:
                self._call_ids.add(call_id)

    def _ended(self, kwargs: dict[str, Any], start_time: datetime, end_time: datetime) -> None:
        self._seen(kwargs)
        self.total.llmSec += (end_time - start_time).total_seconds()

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: dict[str, Any]) -> None:
        self._seen(kwargs)

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: datetime, end_time: datetime
    ) -> None:
        self._ended(kwargs, start_time, end_time)
        usage = getattr(response_obj, "usage", None)
        self.total.llmPromptTokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.total.llmCompletionTokens += int(getattr(usage, "completion_tokens", 0) or 0)
        cost = kwargs.get("response_cost")
        if cost:
            self.total.llmCostUsd = (self.total.llmCostUsd or 0.0) + float(cost)

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: datetime, end_time: datetime
    ) -> None:
        self._ended(kwargs, start_time, end_time)
        self.total.llmFailedCalls += 1

    async def snapshot(self) -> LLMUsage:
        """The totals so far, once litellm has run the callbacks it queued."""
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        await GLOBAL_LOGGING_WORKER.flush()
        return LLMUsage(**asdict(self.total))


def install_usage_meter() -> UsageMeter:
    meter = UsageMeter()
    litellm.callbacks = [*litellm.callbacks, meter]
    return meter
