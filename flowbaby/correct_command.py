"""`flowbaby memories edit TOPIC` and `flowbaby memories supersede OLDER NEWER`: a person corrects memory.

edit stores a new version of the topic (ingestForAgent with its topicId, INGEST_CONTRACT.md 3.1): the
newest version's fields, with what the flags give replacing them, or with the fields of a JSON object
read from a file or standard input (`--json FILE`, `--json -`). No editor is started. supersede marks
the older topic's newest version Superseded by the newer one (confirmSupersession with `listed: false`,
3.12): the pair need not be one the suggestions list.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from flowbaby.owner_line import call_json
from flowbaby.scope_option import scope_argument, scoped

EDITOR_NAME = "person"
"""The agentName of a version a person wrote with `flowbaby memories edit` (the browser's and VS Code's too)."""
LIST_FLAGS = {
    "decision": "decisions",
    "rationale": "rationale",
    "open_question": "openQuestions",
    "next_step": "nextSteps",
    "reference": "references",
}
JSON_FIELDS = ("topic", "context", "decisions", "rationale", "openQuestions", "nextSteps", "references", "status")


def add_correction_commands(actions: Any) -> None:
    edit = actions.add_parser(
        "edit", help="store a new version of a memory: its newest version with the fields given replaced"
    )
    edit.add_argument("topic_id", help="the memory's topicId")
    edit.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    edit.add_argument("--topic", help="a new topic (title)")
    edit.add_argument("--context", help="a new context")
    for flag, field in LIST_FLAGS.items():
        edit.add_argument(
            f"--{flag.replace('_', '-')}", dest=flag, action="append", help=f"replaces {field} (repeat for several)"
        )
    edit.add_argument("--add-decision", action="append", help="adds a decision to the newest version's (repeat)")
    edit.add_argument("--status", choices=("Active", "DecisionRecord"), help="the new version's status")
    scope_argument(edit)
    edit.add_argument(
        "--json",
        dest="json_file",
        metavar="FILE",
        help=f"a JSON object whose fields ({', '.join(JSON_FIELDS)}) replace the newest version's; - reads stdin",
    )
    supersede = actions.add_parser("supersede", help="mark OLDER as superseded by NEWER (a person's decision)")
    supersede.add_argument("older", help="the topicId that is no longer current")
    supersede.add_argument("newer", help="the topicId that replaces it")
    supersede.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")


def edit_params(args: argparse.Namespace, latest: dict[str, Any], topic_id: str) -> dict[str, Any]:
    """ingestForAgent's params for the new version; SystemExit when nothing would change."""
    fields = {
        "topic": latest["topic"],
        "context": latest["context"],
        **{field: list(latest[field]) for field in LIST_FLAGS.values()},
    }
    status = latest["status"] if latest["status"] not in ("Superseded", "Proposed") else "Active"
    given = _json_fields(args.json_file) if args.json_file else {}
    status = given.pop("status", status)
    fields.update(given)
    for name in ("topic", "context"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    for flag, field in LIST_FLAGS.items():
        if getattr(args, flag) is not None:
            fields[field] = getattr(args, flag)
    fields["decisions"] = [*fields["decisions"], *(args.add_decision or [])]
    status = args.status or status
    if all(fields[k] == latest[k] for k in fields) and status == latest["status"]:
        raise SystemExit("flowbaby memories edit: nothing to change (give flags or --json)")
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    metadata = {"topicId": topic_id, "createdAt": latest["createdAt"], "updatedAt": now, "status": status}
    if latest.get("planId"):
        metadata["planId"] = latest["planId"]
    return {**fields, "agentName": EDITOR_NAME, "metadata": metadata}


def _json_fields(source: str) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if source == "-" else open(source, encoding="utf-8").read()  # noqa: SIM115
        value = json.loads(text)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"flowbaby memories edit: --json {source}: not a JSON object ({exc})") from None
    if not isinstance(value, dict):
        raise SystemExit(f"flowbaby memories edit: --json {source}: not a JSON object")
    unknown = sorted(set(value) - set(JSON_FIELDS))
    if unknown:
        raise SystemExit(f"flowbaby memories edit: --json {source}: unknown fields {', '.join(unknown)}")
    return value


async def run_correction(args: argparse.Namespace, service: Any) -> dict[str, Any]:
    """edit: the new version's ingest reply; supersede: confirmSupersession's reply."""
    if args.memories_command == "supersede":
        params = {"olderTopicId": args.older, "newerTopicId": args.newer, "listed": False}
        return await call_json(service, "confirm_supersession", params, writer="person")
    latest = (await call_json(service, "get_memory", scoped(args, {"topicId": args.topic_id})))["latest"]
    return await call_json(service, "ingest", scoped(args, edit_params(args, latest, args.topic_id)), writer="person")
