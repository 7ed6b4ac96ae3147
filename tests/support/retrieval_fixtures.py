"""Developer summaries for retrieval tests: a multi-hop pair linked only through the
graph, distractors that share the question's words, and a revised decision."""

from __future__ import annotations

from typing import Any


def memory(
    topic_id: str,
    topic: str,
    context: str,
    created: str,
    *,
    status: str = "Active",
    decisions: list[str] | None = None,
    references: list[str] | None = None,
    plan: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"topicId": topic_id, "createdAt": created, "updatedAt": created, "status": status}
    if plan:
        metadata["planId"] = plan
    return {
        "topic": topic,
        "context": context,
        "decisions": decisions or [],
        "references": references or [],
        "metadata": metadata,
    }


# The question names the incident; only the incident memory names the ticket that the
# fix memory is filed under. Reaching the fix takes incident -> PLAT-2291 -> fix.
MULTI_HOP_QUESTION = "How did we fix the E_LEDGER_LOCK invoice export failures?"
MULTI_HOP_FIRST = "ledger-incident"
MULTI_HOP_SECOND = "plat-2291-rollout"

MULTI_HOP_SET = [
    memory(
        MULTI_HOP_FIRST,
        "Incident: invoice exports failing with E_LEDGER_LOCK",
        "Invoice exports failed for 40 minutes with E_LEDGER_LOCK while the nightly job held table locks.",
        "2025-03-12T10:00:00Z",
        decisions=["Track the permanent fix as PLAT-2291"],
    ),
    memory(
        MULTI_HOP_SECOND,
        "PLAT-2291 rollout",
        "PLAT-2291 shipped: billing/ledger.py now takes Postgres advisory locks behind the LEDGER_ADVISORY flag.",
        "2025-03-20T10:00:00Z",
        decisions=["Keep the LEDGER_ADVISORY flag on in production"],
    ),
    memory(
        "export-format",
        "Invoice export formatting fix",
        "We fixed invoice export failures caused by bad date formats; exports now use ISO dates.",
        "2025-03-15T10:00:00Z",
        decisions=["Exports write ISO-8601 dates"],
    ),
    memory(
        "export-retries",
        "Export retry budget",
        "Invoice export failures are retried; we fixed the retry budget at 3 attempts.",
        "2025-03-14T10:00:00Z",
        decisions=["Retry failed exports 3 times"],
    ),
    memory(
        "ledger-schema",
        "Ledger schema cleanup",
        "We dropped unused columns from the ledger_entries table.",
        "2025-02-01T10:00:00Z",
    ),
    memory(
        "redis-cache",
        "Redis caching decision",
        "Session lookups moved to a Redis cache with a 15 minute TTL.",
        "2025-03-03T10:00:00Z",
        status="DecisionRecord",
        references=["PR #482"],
    ),
]
