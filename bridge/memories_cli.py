"""`flowbaby memories list|show|forget`: what a workspace stores, from the shell.

Works whether or not a bridge or `serve` owns the workspace (then the call goes through it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from graph.core.contract import ContractFailure, FlowbabyError
from graph.service import EXIT_WORKSPACE_UNAVAILABLE, MemoryService, open_service


def filter_arguments(parser: argparse.ArgumentParser) -> None:
    """listMemories' filter (INGEST_CONTRACT.md 16.1), shared by list and forget."""
    parser.add_argument("--status", action="append", choices=("Active", "Superseded", "DecisionRecord"))
    parser.add_argument("--topic-prefix", dest="topicIdPrefix", help="topicIds that start with this")
    parser.add_argument("--agent", dest="agentName", help="stored by this agent")
    parser.add_argument("--created-after", dest="createdAfter", metavar="ISO")
    parser.add_argument("--created-before", dest="createdBefore", metavar="ISO")
    parser.add_argument("--updated-after", dest="updatedAfter", metavar="ISO")
    parser.add_argument("--updated-before", dest="updatedBefore", metavar="ISO")
    parser.add_argument("--text", help="text the memory holds (case-insensitive)")
    parser.add_argument("--all-versions", dest="allVersions", action="store_true", help="every version, not the newest")


FILTER_FIELDS = (
    "status",
    "topicIdPrefix",
    "agentName",
    "createdAfter",
    "createdBefore",
    "updatedAfter",
    "updatedBefore",
    "text",
)


def filter_params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {name: getattr(args, name) for name in FILTER_FIELDS if getattr(args, name) is not None}
    if args.allVersions:
        params["allVersions"] = True
    return params


def add_memories_command(commands: Any) -> None:
    parser = commands.add_parser("memories", help="list, show and forget a workspace's stored memories")
    actions = parser.add_subparsers(dest="memories_command", required=True)
    listing = actions.add_parser("list", help="one page of memories, newest first")
    listing.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    filter_arguments(listing)
    listing.add_argument("--oldest-first", action="store_true")
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--cursor", help="the nextCursor of the previous page")
    listing.add_argument("--json", action="store_true", help="print the reply as JSON")
    show = actions.add_parser("show", help="one memory: every version, links, entities, provenance")
    show.add_argument("topic_id")
    show.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    forget = actions.add_parser("forget", help="forget a memory (a version, a topic, or a filter) from every store")
    forget.add_argument("topic_id", nargs="?", help="the topic (every version unless --version)")
    forget.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    forget.add_argument("--version", type=int, help="only this version of the topic")
    filter_arguments(forget)
    forget.add_argument("--dry-run", action="store_true", help="only count what would be forgotten")
    forget.add_argument("--yes", action="store_true", help="do not ask for confirmation")


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
    params = forget_params(args)
    counted = await service.forget_memory({**params, "dryRun": True})
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
    return await service.forget_memory(params)


async def _call(args: argparse.Namespace, service: MemoryService) -> dict[str, Any]:
    if args.memories_command == "forget":
        return await _forget(args, service)
    if args.memories_command == "list":
        params = filter_params(args)
        params.update(limit=args.limit, order="oldest" if args.oldest_first else "newest")
        if args.cursor:
            params["cursor"] = args.cursor
        return await service.list_memories(params)
    return await service.get_memory({"topicId": args.topic_id})


def format_list(reply: dict[str, Any]) -> str:
    lines = [
        f"{m['stagedAt']}  {m['status']:<14} v{m['version']:<3} {m['topicId']}  {m['topic'][:60]}"
        for m in reply["memories"]
    ]
    if reply["nextCursor"]:
        lines.append(f"more: --cursor {reply['nextCursor']}")
    return "\n".join(lines)


async def _run(args: argparse.Namespace) -> int:
    service = await open_service("memories", args.workspace)
    if isinstance(service, FlowbabyError):
        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        reply = await _call(args, service)
    except ContractFailure as error:
        print(json.dumps(error.to_response(), indent=2), file=sys.stderr)
        return 1
    finally:
        await service.close(1.0)
    if args.memories_command == "list" and not args.json:
        print(format_list(reply))
    else:
        print(json.dumps(reply, indent=2, ensure_ascii=False))
    return 0


def run_memories_command(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))
