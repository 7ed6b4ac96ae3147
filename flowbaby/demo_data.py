"""Realistic agent summaries for `make demo`, spread over six weeks of a project.

They share components across weeks (Redis, the reconciliation job, the ledger lock)
so that the graph links summaries that never mention each other, and one topic is
revised twice so that supersession shows.
"""

from __future__ import annotations

from typing import Any


def _summary(
    topic_id: str,
    day: str,
    topic: str,
    context: str,
    *,
    plan: str | None = None,
    status: str = "Active",
    agent: str = "architect",
    **lists: list[str],
) -> dict[str, Any]:
    stamp = f"2025-{day}T10:00:00Z"
    metadata: dict[str, Any] = {
        "topicId": topic_id,
        "createdAt": stamp,
        "updatedAt": stamp,
        "status": status,
        "sessionId": f"sess-{day}",
    }
    if plan:
        metadata["planId"] = plan
    return {
        "topic": topic,
        "context": context,
        "agentName": agent,
        "metadata": metadata,
        **{key: value for key, value in lists.items()},
    }


DEMO_SUMMARIES: list[dict[str, Any]] = [
    _summary(
        "redis-session-cache",
        "03-03",
        "Redis caching decision",
        "Login latency is dominated by session lookups in Postgres. We evaluated Memcached and Redis for the session cache.",
        decisions=[
            "Use Redis as the session cache with a 15 minute TTL",
            "Keep Postgres as the source of truth for sessions",
        ],
        rationale=["Redis supports key expiry and persistence; Memcached loses sessions on restart"],
        openQuestions=["Do we need Redis Sentinel for failover?"],
        nextSteps=["Add a cache-aside wrapper in auth/session_store.py"],
        references=["docs/adr/0007-redis-session-cache.md"],
        status="DecisionRecord",
    ),
    _summary(
        "plan-015-strategy",
        "03-05",
        "Plan 015 Implementation Strategy",
        "Plan 015 rebuilds billing reconciliation. The nightly reconciliation job in billing/reconcile.py runs for four hours and blocks invoice exports.",
        plan="plan-015",
        decisions=[
            "Split the nightly reconciliation job into per-account batches",
            "Move ledger locking from table locks to Postgres advisory locks",
            "Publish reconciliation results on the billing-events Kafka topic",
        ],
        rationale=[
            "Per-account batches can be retried without re-running the whole night",
            "Advisory locks avoid blocking invoice exports",
        ],
        openQuestions=[
            "Should batches run on the existing Celery workers or a new queue?",
            "How do we backfill the last 90 days?",
        ],
        nextSteps=["Prototype advisory locks in billing/ledger.py", "Measure batch runtime on staging"],
        references=["PR #471"],
    ),
    _summary(
        "ledger-lock-incident",
        "03-12",
        "Incident: E_LEDGER_LOCK during invoice export",
        "Invoice exports failed for 40 minutes with E_LEDGER_LOCK while the nightly reconciliation job held table locks on the ledger.",
        plan="plan-015",
        decisions=["Raise the export retry budget to 5 attempts", "Track the permanent fix as PLAT-2291"],
        rationale=["Exports are idempotent, so retries are safe"],
        nextSteps=["Add an alert on E_LEDGER_LOCK rate"],
        references=["PR #482", "billing/export.py"],
        agent="oncall",
    ),
    _summary(
        "advisory-locks-rollout",
        "03-19",
        "PLAT-2291: advisory locks rollout",
        "PLAT-2291 is done: Postgres advisory locks in billing/ledger.py passed the load test, so ledger writers no longer queue behind reconciliation.",
        plan="plan-015",
        decisions=["Roll out advisory locks behind the LEDGER_ADVISORY_LOCKS flag"],
        rationale=["The flag allows an instant rollback to table locks"],
        nextSteps=["Lower the export retry budget again"],
        references=["PR #490"],
        agent="implementer",
    ),
    _summary(
        "celery-vs-queue",
        "03-24",
        "Batch runner for per-account reconciliation",
        "Per-account reconciliation batches need a runner. The existing Celery workers are saturated by email jobs.",
        plan="plan-015",
        decisions=[
            "Run reconciliation batches on a dedicated Celery queue named reconcile",
            "Cap the reconcile queue at 8 concurrent workers",
        ],
        rationale=["A dedicated queue isolates billing from email traffic"],
        openQuestions=["Should the reconcile queue autoscale on Kubernetes?"],
        agent="implementer",
    ),
    _summary(
        "redis-session-cache",
        "03-28",
        "Redis caching decision (revised TTL)",
        "Support reported users logged out mid-checkout. The 15 minute TTL on the Redis session cache is too short for long checkouts.",
        decisions=[
            "Use Redis as the session cache with a 60 minute sliding TTL",
            "Keep Postgres as the source of truth for sessions",
        ],
        rationale=["Sliding expiry keeps active users logged in without growing memory much"],
        references=["docs/adr/0007-redis-session-cache.md"],
        status="DecisionRecord",
    ),
    _summary(
        "kafka-billing-events",
        "04-02",
        "billing-events Kafka topic schema",
        "Downstream finance dashboards consume reconciliation results from the billing-events Kafka topic.",
        plan="plan-015",
        decisions=["Use Avro schemas registered in the schema registry", "Key messages by account id"],
        rationale=["Keying by account keeps per-account ordering"],
        openQuestions=["Retention: 7 days or 30 days?"],
        agent="implementer",
    ),
    _summary(
        "rate-limiter",
        "04-07",
        "API rate limiter on Redis",
        "Public API abuse spiked. The API gateway needs a per-token rate limiter shared by all gateway pods.",
        decisions=[
            "Implement a sliding-window rate limiter on the existing Redis cluster",
            "Return HTTP 429 with a Retry-After header",
        ],
        rationale=["Redis is already deployed for the session cache, so no new infrastructure"],
        nextSteps=["Load test the limiter with 2k requests per second"],
        references=["gateway/ratelimit.go"],
        agent="implementer",
    ),
    _summary(
        "redis-sentinel",
        "04-10",
        "Redis failover with Sentinel",
        "The session cache and the rate limiter both depend on one Redis primary. A primary failure logs everyone out and disables rate limiting.",
        decisions=["Deploy Redis Sentinel with three sentinels", "Clients use the Sentinel-aware connection pool"],
        rationale=["Sentinel gives automatic failover without moving to Redis Cluster"],
        openQuestions=["Does the Go client in gateway/ratelimit.go support Sentinel?"],
        status="DecisionRecord",
    ),
    _summary(
        "backfill-90-days",
        "04-15",
        "Backfilling 90 days of reconciliation",
        "Plan 015 needs 90 days of historical reconciliation results on the billing-events Kafka topic.",
        plan="plan-015",
        decisions=["Backfill with the reconcile Celery queue at night, 3 days of data per run"],
        rationale=["Running during the day would compete with invoice exports"],
        nextSteps=["Write scripts/backfill_reconcile.py"],
        agent="implementer",
    ),
    _summary(
        "export-retry-removal",
        "04-18",
        "Removing the export retry workaround",
        "With advisory locks rolled out, E_LEDGER_LOCK has not occurred for two weeks.",
        plan="plan-015",
        decisions=["Lower the export retry budget back to 2 attempts", "Keep the E_LEDGER_LOCK alert"],
        references=["PR #503", "billing/export.py"],
        agent="oncall",
    ),
    _summary(
        "observability-otel",
        "04-22",
        "Tracing reconciliation with OpenTelemetry",
        "Slow per-account batches are hard to diagnose. We add OpenTelemetry spans around each batch.",
        plan="plan-015",
        decisions=["Instrument billing/reconcile.py with OpenTelemetry spans", "Export traces to Grafana Tempo"],
        openQuestions=["Sample rate for nightly batches?"],
        agent="implementer",
    ),
    _summary(
        "redis-session-cache",
        "04-25",
        "Redis caching decision (final)",
        "After Sentinel failover tests, the Redis session cache keeps a 60 minute sliding TTL and gains a local fallback.",
        decisions=[
            "Use Redis as the session cache with a 60 minute sliding TTL",
            "Fall back to Postgres session reads when Sentinel reports no primary",
        ],
        rationale=["Users stay logged in during a failover"],
        references=["docs/adr/0007-redis-session-cache.md"],
        status="DecisionRecord",
    ),
]


DEMO_QUESTIONS: list[tuple[str, str]] = [
    ("What TTL do we use for the Redis session cache now?", "finds the newest version of a decision revised twice"),
    ("E_LEDGER_LOCK", "an exact error code"),
    (
        "What was the permanent fix for the E_LEDGER_LOCK incident?",
        "multi-hop: only the incident names E_LEDGER_LOCK; its ticket PLAT-2291 links it to the rollout in the graph",
    ),
    ("Which queue runs the per-account reconciliation batches, and how many workers?", "a plain-language question"),
    (
        "What happens to logged-in users if the Redis primary fails?",
        "an answer spread over the Sentinel and session-cache decisions",
    ),
]
