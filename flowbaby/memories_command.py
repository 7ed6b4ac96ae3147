"""`flowbaby memories list|show|add|restore|forget` (and `edit|supersede`, flowbaby/correct_command.py),
`flowbaby export` and `flowbaby import`: what a workspace stores, from the shell.

Works whether or not a bridge or `serve` owns the workspace (then the call goes through it).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from flowbaby.correct_command import add_correction_commands, run_correction
from flowbaby.owner_line import OwnerLine, call_json, failure_body, open_for
from flowbaby.proposals_command import add_proposal_commands, run_proposal
from flowbaby.scope_option import scope_argument, scoped
from graph.core.filter_conditions import FILTER_CONDITIONS

if TYPE_CHECKING:  # the engine is imported only when a command needs it (flowbaby --help stays fast)
    from graph.api import MemoryService
    from graph.core.contract import FlowbabyError


def filter_arguments(parser: argparse.ArgumentParser) -> None:
    """listMemories' filter (INGEST_CONTRACT.md 20.1), shared by list and forget."""
    parser.add_argument(
        "--status",
        action="append",
        choices=("Active", "Superseded", "DecisionRecord", "Proposed"),
        help="only this status (repeat for several)",
    )
    parser.add_argument("--topic-prefix", dest="topicIdPrefix", help="topicIds that start with this")
    parser.add_argument("--agent", dest="agentName", help="stored by this agent")
    parser.add_argument("--created-after", dest="createdAfter", metavar="ISO", help="created at or after this time")
    parser.add_argument("--created-before", dest="createdBefore", metavar="ISO", help="created before this time")
    parser.add_argument("--updated-after", dest="updatedAfter", metavar="ISO", help="updated at or after this time")
    parser.add_argument("--updated-before", dest="updatedBefore", metavar="ISO", help="updated before this time")
    parser.add_argument("--text", help="text the memory holds (case-insensitive)")
    parser.add_argument("--all-versions", dest="allVersions", action="store_true", help="every version, not the newest")


def filter_params(args: argparse.Namespace) -> dict[str, Any]:
    chosen = {name: getattr(args, name) for name in FILTER_CONDITIONS}
    params: dict[str, Any] = {name: value for name, value in chosen.items() if value is not None}
    if args.allVersions:
        params["allVersions"] = True
    return params


def add_memories_command(commands: Any) -> None:
    parser = commands.add_parser(
        "memories", help="list, show, edit, supersede, restore, forget, accept and dismiss a workspace's memories"
    )
    actions = parser.add_subparsers(dest="memories_command", required=True)
    listing = actions.add_parser("list", help="one page of memories, newest first")
    listing.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    filter_arguments(listing)
    listing.add_argument("--oldest-first", action="store_true", help="oldest first (default: newest first)")
    listing.add_argument("--limit", type=int, default=50, help="memories per page (1-500)")
    listing.add_argument("--cursor", help="the nextCursor of the previous page")
    listing.add_argument("--json", action="store_true", help="print the reply as JSON")
    scope_argument(listing, "project", "user", "all")
    show = actions.add_parser("show", help="one memory: every version, links, entities, provenance")
    show.add_argument("topic_id", help="the memory's topicId")
    show.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    show.add_argument("--scope", choices=("project", "user"), help="the store (default: the project's, then yours)")
    add = actions.add_parser("add", help="store a memory (a decision, a preference with --scope user)")
    add.add_argument("--topic", required=True, help="a short title")
    add.add_argument("--context", required=True, help="what it is about and why")
    add.add_argument("--decision", action="append", default=[], help="a decision (repeat)")
    add.add_argument("--topic-id", dest="topic_id", help="a new version of this topicId (default: reconciled)")
    add.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    scope_argument(add)
    restore = actions.add_parser(
        "restore", help="undo the newest decision (automatic or manual) that superseded this memory"
    )
    restore.add_argument("topic_id", help="the topicId of the memory made Superseded")
    restore.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    scope_argument(restore)
    forget = actions.add_parser("forget", help="forget a memory (a version, a topic, or a filter) from every store")
    forget.add_argument("topic_id", nargs="?", help="the topic (every version unless --version)")
    forget.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    forget.add_argument("--version", type=int, help="only this version of the topic")
    filter_arguments(forget)
    forget.add_argument("--dry-run", action="store_true", help="only count what would be forgotten")
    forget.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    scope_argument(forget)
    forget.add_argument(
        "--wait",
        action="store_true",
        help="with a running owner, also wait for the vector files' and the graph's steps (their processes may "
        "need seconds to start); without it they finish in the owner and the reply lists them in pending",
    )
    add_correction_commands(actions)
    add_proposal_commands(actions)


def forget_params(args: argparse.Namespace) -> dict[str, Any]:
    """A topic (and version), or a filter of at least one condition: never every memory by accident."""
    chosen = filter_params(args)
    if args.topic_id:
        if chosen:
            raise SystemExit("flowbaby memories forget: give a topic id or filter options, not both")
        params: dict[str, Any] = {"topicId": args.topic_id}
        if args.version is not None:
            params["version"] = args.version
        return params
    if not {k for k in chosen if k != "allVersions"}:
        raise SystemExit("flowbaby memories forget: give a topic id, or at least one filter option")
    if args.version is not None:
        raise SystemExit("flowbaby memories forget: --version needs a topic id")
    return {"filter": chosen}


async def _forget(args: argparse.Namespace, service: MemoryService) -> dict[str, Any]:
    """A dry run first; then, unless --dry-run, the confirmation (or --yes) and the forget."""
    params = scoped(args, forget_params(args))
    counted = await call_json(service, "forget_memory", {**params, "dryRun": True})
    if args.dry_run or not counted["versions"]:
        return counted
    if not args.yes:
        listed = ", ".join(counted["topicIds"][:10]) + (" …" if counted["topics"] > 10 else "")
        print(
            f"Forget {counted['versions']} version(s) of {counted['topics']} memory topic(s) ({listed}) from every "
            "store? This cannot be undone. [y/N] ",
            end="",
            file=sys.stderr,
            flush=True,
        )
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("nothing forgotten", file=sys.stderr)
            return {**counted, "cancelled": True}
    if not args.wait and isinstance(service, OwnerLine):
        params["waitForStores"] = False  # the owner finishes the graph step; this process owns nothing to wait for
    return await call_json(service, "forget_memory", params)


async def _call(args: argparse.Namespace, service: MemoryService) -> dict[str, Any]:
    if args.memories_command == "forget":
        return await _forget(args, service)
    if args.memories_command in ("edit", "supersede"):
        return await run_correction(args, service)
    if args.memories_command in ("accept", "dismiss"):
        return await run_proposal(args, service)
    if args.memories_command == "list":
        params = filter_params(args)
        params.update(limit=args.limit, order="oldest" if args.oldest_first else "newest")
        if args.cursor:
            params["cursor"] = args.cursor
        return await call_json(service, "list_memories", scoped(args, params))
    if args.memories_command == "add":
        fields: dict[str, Any] = {"topic": args.topic, "context": args.context, "decisions": args.decision}
        if args.topic_id:
            fields["metadata"] = {"topicId": args.topic_id}
        params = scoped(args, {**fields, "agentName": "flowbaby-cli"})
        return await call_json(service, "store_memory", params, writer="person")
    if args.memories_command == "restore":
        return await call_json(service, "restore_memory", scoped(args, {"topicId": args.topic_id}))
    shown = {"topicId": args.topic_id}
    return await call_json(service, "get_memory", {**shown, "scope": args.scope} if args.scope else shown)


def format_list(reply: dict[str, Any]) -> str:
    lines = [
        f"{m['stagedAt']}  {m.get('scope', 'project'):<7} {m['status']:<14} v{m['version']:<3} {m['topicId']}  "
        f"{m['topic'][:60]}"
        for m in reply["memories"]
    ]
    if reply["nextCursor"]:
        lines.append(f"more: --cursor {reply['nextCursor']}")
    return "\n".join(lines)


async def _run(args: argparse.Namespace) -> int:
    # A forget that owns the workspace waits for its graph step; list and show leave the graph work to the finisher.
    service = await open_for("memories", args.workspace, build_graph=args.memories_command == "forget")
    if isinstance(service, Exception):  # a FlowbabyError: open_service said why on stderr
        from graph.api import EXIT_WORKSPACE_UNAVAILABLE

        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        reply = await _call(args, service)
    except Exception as exc:
        body = failure_body(exc)
        if body is None:
            raise
        print(json.dumps(body, indent=2), file=sys.stderr)
        return 1
    finally:
        await service.close(1.0, hand_on=True)
    if args.memories_command == "list" and not args.json:
        print(format_list(reply))
    else:
        print(json.dumps(reply, indent=2, ensure_ascii=False))
    if reply.get("pending"):
        print(
            f"flowbaby memories forget: gone from the store and out of search; still running in the owner: "
            f"{', '.join(reply['pending'])} (forget {reply.get('forgetId')}, kept in its journal until done)",
            file=sys.stderr,
        )
    return 0


def run_memories_command(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_run(args))


# -- flowbaby export / import (INGEST_CONTRACT.md 20.5) -----------------------------------------


def add_export_command(commands: Any) -> None:
    export = commands.add_parser("export", help="write every memory version as JSON lines (a format version first)")
    export.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    export.add_argument("--out", help="file to write, mode 0600 (default: standard output)")
    scope_argument(export)


def add_import_file_command(actions: Any) -> None:
    """`flowbaby import file FILE`, also spelled `flowbaby import FILE` (flowbaby.cli)."""
    load = actions.add_parser("file", help="read an export file into the workspace: every line or none")
    load.add_argument("file", help="a file written by flowbaby export")
    load.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    load.add_argument(
        "--retire-mine",
        dest="retire_mine",
        action="store_true",
        help="let the file's memories retire ones you wrote yourself (default: they stay current, as suggestions)",
    )
    scope_argument(load)


async def export_to(service: MemoryService, out: IO[str], scope: str = "project") -> int:
    """Every version of the `scope`'s store, oldest first: the header line, then one line each. Returns the count."""
    given = {} if scope == "project" else {"scope": scope}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as body:
        count = 0
        cursor: str | None = None
        header: dict[str, Any] = {}
        while True:
            page = await call_json(service, "export_memories", {**given, "cursor": cursor} if cursor else given)
            header = page["header"] or header
            for memory in page["memories"]:
                body.write(json.dumps(memory, ensure_ascii=False) + "\n")
                count += 1
            cursor = page["nextCursor"]
            if cursor is None:
                break
        out.write(json.dumps({**header, "memories": count}) + "\n")
        body.seek(0)
        shutil.copyfileobj(body, out)
    return count


def read_export(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """The file's versions with their line numbers, and every fault as `line N: CODE: message`
    (the ingest validation's codes and messages): the import goes ahead only without faults. A
    line that is not UTF-8, not strict JSON or nested deeper than the wire allows is a fault like
    any other, never a traceback."""
    import graph.core.jsonwire as jsonwire
    from graph.core.contract import ExportedMemory, ExportHeader, FlowbabyError, validate_request

    errors: list[str] = []
    records: list[tuple[int, dict[str, Any]]] = []
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [], [f"{path}: INVALID_WORKSPACE_PATH: cannot read the file: {exc.strerror or exc}"]
    lines = [(number, line) for number, line in enumerate(data.splitlines(), 1) if line.strip()]
    if not lines:
        return [], ["line 1: INVALID_PAYLOAD: the file is empty; it needs the header line"]
    header: Any = None
    for number, line in lines:
        try:
            value = jsonwire.loads(line)
        except jsonwire.JSONInputError as exc:
            errors.append(f"line {number}: INVALID_PAYLOAD: not JSON ({exc})")
            continue
        if not isinstance(value, dict):
            errors.append(f"line {number}: INVALID_PAYLOAD: not a JSON object")
            continue
        model: type[Any] = ExportHeader if number == lines[0][0] else ExportedMemory
        try:
            validate_request(model, value)
        except FlowbabyError as error:
            errors.append(f"line {number}: {error.code.value}: {error.message}")
            continue
        if model is ExportedMemory:
            records.append((number, value))
        else:
            header = value
    if not errors and header["memories"] != len(records):
        errors.append(
            f'line {lines[0][0]}: INVALID_PAYLOAD: Field "memories" says {header["memories"]} versions; '
            f"the file holds {len(records)} (cut short?)"
        )
    return records, errors


async def import_from(
    service: MemoryService, records: list[tuple[int, dict[str, Any]]], scope: str = "project", retire_mine: bool = False
) -> dict[str, Any]:
    """A dry run of every batch first (conflicts, ids, dates, the person's memories), then the import into the
    `scope`'s store; faults name the line. `retire_mine`: the person lets it retire memories they wrote."""
    given = {} if scope == "project" else {"scope": scope}
    from graph.core.contract import MAX_IMPORT_BATCH, FlowbabyError

    batches = [records[i : i + MAX_IMPORT_BATCH] for i in range(0, len(records), MAX_IMPORT_BATCH)]
    totals = {"imported": 0, "skipped": 0, "queuedOperations": 0, "undecided": 0}
    retired: list[dict[str, Any]] = []
    for dry_run in (True, False):
        for batch in batches:
            try:
                params = {**given, "memories": [r for _, r in batch], "dryRun": dry_run}
                reply = await call_json(service, "import_memories", params, retire_person=retire_mine)
            except FlowbabyError as error:
                raise ImportRefused(_line_of(error, batch)) from None
            if not dry_run:
                for key in totals:
                    totals[key] += reply.get(key, 0)
                retired += reply.get("retired", [])
    return {"success": True, "versions": len(records), **totals, "retired": retired}


def undo_command(retired: dict[str, Any], workspace: str, scope: str) -> str:
    """The command that gives a memory an import retired its place back (INGEST_CONTRACT.md 20.5)."""
    where = f" --workspace {shlex.quote(workspace)}" + ("" if scope == "project" else f" --scope {scope}")
    undo = retired["undo"]
    if "restore" in undo:
        return f"flowbaby memories restore {shlex.quote(undo['restore'])}{where}"
    topic = shlex.quote(undo["forget"])
    return " && ".join(f"flowbaby memories forget {topic} --version {v} --yes{where}" for v in undo["versions"])


class ImportRefused(Exception):
    """A fault found by the service, with its line."""


def _line_of(error: FlowbabyError, batch: list[tuple[int, dict[str, Any]]]) -> str:
    fields = error.details.get("fields") or []
    for field in fields:
        parts = str(field).split(".")
        if len(parts) > 1 and parts[0] == "memories" and parts[1].isdigit() and int(parts[1]) < len(batch):
            return f"line {batch[int(parts[1])][0]}: {error.code.value}: {error.message}"
    return f"lines {batch[0][0]}-{batch[-1][0]}: {error.code.value}: {error.message}"


async def _transfer(args: argparse.Namespace) -> int:
    records: list[tuple[int, dict[str, Any]]] = []
    if args.command == "import":
        records, errors = read_export(Path(args.file))
        if errors:
            for line in errors[:50]:
                print(line, file=sys.stderr)
            more = f" (first 50 of {len(errors)} shown)" if len(errors) > 50 else ""
            print(f"flowbaby import: nothing imported: {len(errors)} faulty lines{more}", file=sys.stderr)
            return 1
    from graph.api import EXIT_WORKSPACE_UNAVAILABLE, open_service
    from graph.core.contract import ContractFailure, FlowbabyError

    service = await open_service(args.command, args.workspace, build_graph=False)
    if isinstance(service, FlowbabyError):
        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        if args.command == "export":
            if args.out:
                count = await _export_file(service, Path(args.out), args.scope)
            else:
                count = await export_to(service, sys.stdout, args.scope)
            print(f"flowbaby export: {count} versions", file=sys.stderr)
            return 0
        try:
            reply = await import_from(service, records, args.scope, args.retire_mine)
        except ImportRefused as refused:
            print(f"{refused}\nflowbaby import: nothing imported", file=sys.stderr)
            return 1
        for gone in reply["retired"]:
            print(
                f"flowbaby import: retired {gone['topicId']} ({gone.get('topic') or ''}), replaced by {gone['by']}; "
                f"undo: {undo_command(gone, args.workspace, args.scope)}",
                file=sys.stderr,
            )
        print(json.dumps(reply, indent=2))
        return 0
    except ContractFailure as error:
        print(json.dumps(error.to_response(), indent=2), file=sys.stderr)
        return 1
    finally:
        await service.close(1.0, hand_on=True)


async def _export_file(service: MemoryService, out: Path, scope: str) -> int:
    """Written beside its place under a fresh name, private (it holds every memory's text), then
    renamed over it: a link already at `out` or at any temporary name is never written through."""
    from graph.api import atomic_writer

    with atomic_writer(out) as handle:
        return await export_to(service, handle, scope)


def run_transfer_command(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_transfer(args))
