"""`flowbaby search "…"`: a workspace's memories for a question, from the shell.

It asks the retrieval agents get (retrieveForAgent, INGEST_CONTRACT.md 3.5: the same lanes, fusion,
abstention and freshness), through the running owner when one answers (flowbaby.owner_line), else
by opening the workspace here; a workspace pointed at a team server asks the server. `--sessions`
ranks the agents' imported session turns in the same list (includeSessions). Text for people,
`--json` for the reply as it is.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from flowbaby.owner_line import call_json, failure_body, open_for

AGENT_NAME = "cli"
"""The audit log's agentName for a search from the shell."""
MAX_TOKENS = 20_000
"""The token budget: large, so `--limit` decides how many come back, not the packing."""


def add_search_command(commands: Any) -> None:
    parser = commands.add_parser(
        "search", help="search the workspace's memories as agents do (--sessions: also the agents' sessions)"
    )
    parser.add_argument("query", help='what to look for, e.g. "what TTL does the session cache use"')
    parser.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    parser.add_argument("--limit", type=int, default=5, help="most results (1-50)")
    parser.add_argument(
        "--sessions", action="store_true", help="also search the agents' imported sessions, ranked in one list"
    )
    parser.add_argument("--json", action="store_true", help="print the retrieval's JSON reply instead of text")
    parser.add_argument(
        "--scope", choices=("all", "project", "user"), default="all", help="the project's store, yours, or both"
    )


def _entry_text(rank: int, entry: dict[str, Any]) -> list[str]:
    turn = entry.get("sessionTurn")
    if turn:
        where = f"{turn.get('source')} {turn.get('sessionId')}"
        head = f"{rank}. {entry['score']:.3f}  session {where}: {turn.get('title')}"
    else:
        date = str(entry.get("updatedAt", ""))[:10]
        head = (
            f"{rank}. {entry['score']:.3f}  {entry['topic']}  [{entry['topicId']} v{entry['version']}, "
            f"{entry['status']}, {date}; {', '.join(entry.get('lanes') or [])}]"
        )
    lines = [head]
    context = " ".join(str(entry.get("context") or "").split())
    lines.append(f"   {context[:300]}{' …' if len(context) > 300 else ''}")
    lines += [f"   - {decision}" for decision in (entry.get("decisions") or [])[:5]]
    if entry.get("via"):
        lines.append(f"   ({entry['via']})")
    if entry.get("possiblySupersededBy"):
        lines.append(f"   (possibly superseded by {entry['possiblySupersededBy']})")
    if entry.get("scope") == "user":
        lines.append(
            "   (your user memory"
            + (f"; overridden here by {entry['overriddenBy']})" if entry.get("overriddenBy") else ")")
        )
    return lines


def as_text(reply: dict[str, Any]) -> str:
    """One block per result, best first; why nothing came back when the retrieval abstained."""
    lines: list[str] = []
    if reply.get("sessionsNotSearched"):
        lines.append(f"sessions not searched: {reply['sessionsNotSearched']}")
    if reply.get("userNotSearched"):
        lines.append(f"user store not searched: {reply['userNotSearched']}")
    if reply.get("abstained"):
        lines.append(f"nothing found: {reply.get('abstainReason')}")
        weak = reply.get("weakCandidates") or []
        if weak:
            lines.append("weak candidates:")
        for rank, entry in enumerate(weak, 1):
            lines += _entry_text(rank, entry)
        return "\n".join(lines)
    for rank, entry in enumerate(reply.get("entries") or [], 1):
        lines += _entry_text(rank, entry)
    if not reply.get("entries"):
        lines.append("nothing found")
    return "\n".join(lines)


async def _run(args: argparse.Namespace) -> int:
    service = await open_for("search", args.workspace)
    if isinstance(service, Exception):  # a FlowbabyError: open_service said why on stderr
        from graph.api import EXIT_WORKSPACE_UNAVAILABLE

        return EXIT_WORKSPACE_UNAVAILABLE
    params = {"query": args.query, "maxResults": args.limit, "maxTokens": MAX_TOKENS, "includeSessions": args.sessions}
    if args.scope != "all":
        params["scope"] = args.scope
    try:
        reply = await call_json(service, "retrieve", params, agent_name=AGENT_NAME)
    except Exception as exc:
        body = failure_body(exc)
        if body is None:
            raise
        if args.json:
            print(json.dumps(body, indent=2))
        else:
            print(f"flowbaby search: {body.get('errorCode')}: {body.get('message') or body['error']}", file=sys.stderr)
        return 1
    finally:
        await service.close(1.0, hand_on=True)
    print(json.dumps(reply, indent=2, ensure_ascii=False) if args.json else as_text(reply))
    return 0


def run_search_command(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_run(args))
