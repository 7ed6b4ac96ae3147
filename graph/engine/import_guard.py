"""What an import may retire (issue 58 item 6), and how the person sees what it did.

An export file is anyone's: its dates are refused when they lie after the import's own run (a memory dated
2099 would pass "an import never replaces a memory made after it" and pin itself at top recency); it never
retires a memory the person wrote unless the person says so (`flowbaby import --retire-mine`); and every
memory it retires is listed in the reply with how to undo it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from graph.core.contract import ErrorCode, ExportedMemory, FlowbabyError, parse_timestamp
from graph.core.memories import Memory
from graph.core.provenance import person_wrote
from graph.search.supersession import LIVE

CLOCK_SLACK = timedelta(minutes=5)
"""How far after the import's run a date may lie (another machine's clock, a little ahead)."""
STAMPS = ("createdAt", "updatedAt", "stagedAt")


def refuse_future(records: Sequence[ExportedMemory], now: str) -> None:
    """INVALID_PAYLOAD naming the first version dated after the import's run (`now`, plus CLOCK_SLACK)."""
    latest = parse_timestamp(now) + CLOCK_SLACK
    for index, record in enumerate(records):
        for name in STAMPS:
            if parse_timestamp(getattr(record, name)) > latest:
                field = f"memories.{index}.{name}"
                raise FlowbabyError(
                    ErrorCode.INVALID_PAYLOAD,
                    f'Field "{field}" ({getattr(record, name)}) is after this import\'s run ({now}): an import '
                    "cannot date a memory later than the time it is imported",
                    fields=[field],
                )


def version_retirements(
    fresh: Sequence[Memory], versions: Callable[[str], list[Memory]], retire_person: bool
) -> list[dict[str, Any]]:
    """The live stored versions the fresh ones would supersede as newer versions of their topic (each with
    how to undo it: forget the imported versions above it, and the stored one is current again).
    PERSON_WRITTEN when one is the person's and `retire_person` is false (nothing is imported)."""
    retired: list[dict[str, Any]] = []
    by_topic: dict[str, list[Memory]] = {}
    for memory in fresh:
        by_topic.setdefault(memory.topic_id, []).append(memory)
    for topic_id, imported in by_topic.items():
        stored = versions(topic_id)
        newest = stored[-1] if stored else None
        above = sorted(m.version for m in imported if newest is not None and m.version > newest.version)
        if newest is None or not above or newest.status not in LIVE:
            continue
        if person_wrote(newest) and not retire_person:
            raise FlowbabyError(
                ErrorCode.PERSON_WRITTEN,
                f'"{topic_id}" was written by the person: the file\'s version {above[-1]} would retire it. Nothing '
                "was imported; import with --retire-mine to let it, or leave that topic out of the file.",
                topicId=topic_id,
            )
        retired.append(
            {
                "topicId": topic_id,
                "memoryId": newest.memory_id,
                "topic": newest.topic,
                "writtenBy": newest.written_by,
                "by": topic_id,
                "undo": {"forget": topic_id, "versions": above},
            }
        )
    return retired


def decision_retirements(reply: dict[str, Any], by: str) -> list[dict[str, Any]]:
    """The memories one applied reconcile decision on the imported topic `by` superseded (its reply object),
    each undone by `flowbaby memories restore <topicId>`."""
    if reply.get("decision") != "replace":
        return []
    superseded = [reply.get("evidence") or {}, *reply.get("alsoSuperseded", [])]
    return [
        {
            "topicId": item["topicId"],
            "memoryId": item.get("memoryId"),
            "topic": item.get("topic"),
            "by": by,
            "undo": {"restore": item["topicId"]},
        }
        for item in superseded
        if item.get("topicId")
    ]
