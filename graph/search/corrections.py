"""A person's corrections of memory: the pair they name in `flowbaby memories supersede OLDER NEWER`
(the memory browser's and VS Code's "superseded by" too), which need not be one the supersession
suggestions list (confirmSupersession with `listed: false`, INGEST_CONTRACT.md 3.12)."""

from __future__ import annotations

from collections.abc import Callable

from graph.core.contract import ConfirmSupersessionRequest, ErrorCode, FlowbabyError, MemoryStatus
from graph.core.memories import Memory
from graph.search.supersession import LIVE


def named_pair(versions: Callable[[str], list[Memory]], request: ConfirmSupersessionRequest) -> tuple[Memory, Memory]:
    """The older and the newer topic's newest versions, once the pair a person named holds: both topics
    stored and different, the newer one live, the older one not Superseded already. `versions(topicId)`:
    the topic's versions, oldest first."""
    older_topic, newer_topic = request.olderTopicId, request.newerTopicId
    if older_topic == newer_topic:
        raise FlowbabyError(
            ErrorCode.INVALID_PAYLOAD,
            "a memory cannot supersede itself: store a new version of it instead (flowbaby memories edit)",
            fields=["newerTopicId"],
        )
    found = []
    for field, topic_id in (("olderTopicId", older_topic), ("newerTopicId", newer_topic)):
        stored = versions(topic_id)
        if not stored:
            raise FlowbabyError(ErrorCode.NOT_FOUND, f'no memory has topicId "{topic_id}"', fields=[field])
        found.append(stored[-1])
    older, newer = found
    if newer.status not in LIVE:
        raise FlowbabyError(
            ErrorCode.INVALID_PAYLOAD,
            f'"{newer_topic}" is Superseded itself: it cannot replace another',
            fields=["newerTopicId"],
        )
    if older.status is MemoryStatus.SUPERSEDED:
        raise FlowbabyError(
            ErrorCode.INVALID_PAYLOAD, f'"{older_topic}" is Superseded already', fields=["olderTopicId"]
        )
    return older, newer
