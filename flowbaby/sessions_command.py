"""`flowbaby sessions list|import|update|repair|search`: the agents' own sessions, from the shell.

Works whether or not a bridge or `serve` owns the workspace (then the call goes through it).
Text for people; `--json` prints the service's answer as it is, for scripts."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_sessions_command(commands: Any) -> None:
    parser = commands.add_parser(
        "sessions", help="index and search the OpenCode and Claude Code sessions of a workspace"
    )
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the workspace's sessions, newest first, with their index status")
    search = actions.add_parser("search", help="search indexed sessions for a natural-language query")
    search.add_argument("query", help='what to look for, e.g. "why did the tests fail"')
    search.add_argument("--session", metavar="ID", help="search this session only (default: every session)")
    search.add_argument("--limit", type=int, default=10, help="most results")
    search.add_argument(
        "--abstain", action="store_true", help="nothing, and two weak candidates, when no turn is close"
    )
    chosen = [listing, search]
    for action, text in (
        ("import", "read a whole session and index it"),
        ("update", "index what changed in a session since its last import"),
        ("repair", "embed a session's chunks that have no vector"),
    ):
        command = actions.add_parser(action, help=text)
        which = command.add_mutually_exclusive_group(required=True)
        which.add_argument("session_id", nargs="?", help="the session's id (from `flowbaby sessions list`)")
        which.add_argument("--all", action="store_true", help="every session under --cwd")
        chosen.append(command)
    for command in chosen:
        command.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
        command.add_argument("--cwd", help="only sessions under this folder (default: the whole workspace)")
        command.add_argument(
            "--source", choices=("opencode", "claude-code", "codex", "gemini"), help="one source only (default: all)"
        )
        command.add_argument("--json", action="store_true", help="print the JSON answer instead of text")


async def _call(service: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The reply's JSON: one operation's, or each session's under --all."""
    from graph.core.contract import SessionsRequest, validate_retrieval

    async def call(op: str, **params: Any) -> dict[str, Any]:
        request = validate_retrieval(SessionsRequest, {"source": args.source, **params})
        reply: dict[str, Any] = (await service.sessions(op, request)).model_dump(mode="json")
        return reply

    if args.action == "list":
        return await call("list", cwd=args.cwd)
    if args.action == "search":
        params = {"q": args.query, "limit": args.limit, "abstain": args.abstain}
        if args.session:
            return await call("search", **params, session_id=args.session)
        return await call("search_all", **params, cwd=args.cwd)
    if args.session_id:
        return await call(args.action, session_id=args.session_id)
    listed = await call("list", cwd=args.cwd)
    return {
        "sessions": [
            await call(args.action, session_id=s["session_id"], source=s["source"]) for s in listed["sessions"]
        ]
    }


async def _run(args: argparse.Namespace) -> int:
    from graph.api import EXIT_WORKSPACE_UNAVAILABLE, open_service
    from graph.core.contract import ContractFailure, FlowbabyError

    service = await open_service("sessions", args.workspace)
    if isinstance(service, FlowbabyError):
        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        reply = await _call(service, args)
    except ContractFailure as error:
        body = error.to_response()
        if args.json:
            print(json.dumps(body, indent=2))
        else:
            message = body.get("message") or body["error"]
            print(f"flowbaby sessions {args.action}: {body['errorCode']}: {message}", file=sys.stderr)
        return 1
    finally:
        await service.close(1.0, hand_on=True)
    print(json.dumps(reply, indent=2, ensure_ascii=False) if args.json else as_text(args.action, reply))
    return 0


def _session_line(row: dict[str, Any]) -> str:
    status = row.get("index_status") or {}
    title = (row.get("title") or "(untitled)")[:50]
    return (
        f"{row['session_id']}  {row['source']:<11}  {str(row.get('updated_at', ''))[:19]:<19}  "
        f"{status.get('status', '?'):<13}  {title}"
    )


def as_text(action: str, reply: dict[str, Any]) -> str:
    """A reply for people: one line per session or hit, the index status's message when it needs a step."""
    if action == "list":
        lines = [_session_line(row) for row in reply["sessions"]]
        lines += [f"problem: {problem}" for problem in reply.get("problems", [])]
        return "\n".join(lines) if lines else "no sessions of this workspace were found"
    if action == "search":
        lines = []
        if reply.get("abstained"):
            lines.append(f"nothing found: {reply['abstained']}; weak candidates:")
        for hit in reply["results"] or reply.get("weak_candidates", []):
            text = " ".join(str(hit["chunk_text"]).split())
            lines.append(f"{hit['score']:.3f}  {hit['source']} {hit['session_id']} #{hit['chunk_index']}")
            lines.append(f"       {text[:300]}{' …' if len(text) > 300 else ''}")
        searched = reply.get("sessions_searched")
        footer = f"{reply['count']} results" + (f" in {searched} sessions" if searched is not None else "")
        return "\n".join([*lines, footer])
    rows = reply.get("sessions", [reply])
    lines = []
    for row in rows:
        counts = ", ".join(f"{row[key]} {key}" for key in ("messages", "chunks", "embedded") if key in row)
        status = row.get("index_status") or {}
        name = f"{row.get('session_id', '')}  {row.get('source', '')}"
        lines.append(f"{name}  {counts}  {status.get('status', '')}".strip())
        if status.get("message"):
            lines.append(f"  {status['message']}")
    return "\n".join(lines) if lines else "no sessions to " + action


def run_sessions_command(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_run(args))
