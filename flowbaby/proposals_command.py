"""`flowbaby memories accept|dismiss TOPIC_ID`: the person's answer to an agent's proposal.

An agent's user-scope write is stored as a proposal (status Proposed, docs/contract/21-user-scope.md):
no project's briefing, recall or retrieval shows it as the person's. Accepting stores its text again as a
new version written by the person (the proposal stays in the topic's history); dismissing forgets it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from flowbaby.owner_line import call_json

if TYPE_CHECKING:
    from graph.api import MemoryService

SUMMARY = ("topic", "context", "decisions", "rationale", "openQuestions", "nextSteps", "references")


def add_proposal_commands(actions: Any) -> None:
    for name, text in (
        ("accept", "make an agent's proposal (status Proposed) your own user memory"),
        ("dismiss", "forget an agent's proposal (status Proposed)"),
    ):
        parser = actions.add_parser(name, help=text)
        parser.add_argument("topic_id", help="the proposal's topicId (flowbaby memories list --status Proposed)")
        parser.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
        parser.add_argument("--scope", choices=("user", "project"), default="user", help="the store (default: yours)")


async def run_proposal(args: argparse.Namespace, service: MemoryService) -> dict[str, Any]:
    """accept: the proposal's text as the person's new version; dismiss: forget the proposal's topic.
    SystemExit when the topic's newest version is not a proposal."""
    shown = await call_json(service, "get_memory", {"topicId": args.topic_id, "scope": args.scope})
    latest = shown["latest"]
    if latest["status"] != "Proposed":
        raise SystemExit(
            f"flowbaby memories {args.memories_command}: {args.topic_id} is not a proposal (its newest version "
            f"is {latest['status']})"
        )
    proposed = {
        "proposedBy": latest.get("agentName"),
        "proposedIn": latest.get("writtenIn"),
        "proposedAt": latest.get("createdAt"),
    }
    if args.memories_command == "dismiss":
        forgotten = await call_json(service, "forget_memory", {"topicId": args.topic_id, "scope": args.scope})
        return {"dismissed": args.topic_id, **proposed, "forget": forgotten}
    fields = {name: latest[name] for name in SUMMARY}
    request = {**fields, "agentName": "flowbaby-cli", "metadata": {"topicId": args.topic_id}, "scope": args.scope}
    stored = await call_json(service, "store_memory", request, writer="person")
    return {"accepted": args.topic_id, **proposed, "stored": stored}
