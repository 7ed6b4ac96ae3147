"""`make bench` section `hooks` (issue 29): on the labelled set of tests/bench/hooks_set.py,
with a real FlowbabyService as the owner and the installed hook command as a real process.

- recall: the answering memory is among the recalled topicIds (a fresh session: nothing
  excluded), and nothing is recalled for the unanswerable prompts; injected tokens;
- briefing: its size in tokens and lines;
- latency: wall time of the installed UserPromptSubmit and SessionStart hook commands against a
  no-op hook command (`true`) in the same run, alternating, with the owner serving;
- capture: the offline distillation's recall of the labelled decisions and edited files, and the
  time of one capture of a 3,000-message Claude Code transcript through the service.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from flowbaby.hook_install import hook_command
from flowbaby.owner_line import call_json
from graph.capture.distil import distil, normal
from graph.engine.service import FlowbabyService
from graph.sessions.model import Block, Message
from tests.bench.hooks_set import EXTRA_ANSWERABLE, EXTRA_UNANSWERABLE, MEMORIES, SESSIONS, Session

LATENCY_RUNS = 40
LONG_SESSION_MESSAGES = 3000


def run_hooks(root: Path) -> dict[str, Any]:
    return asyncio.run(_run(root))


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


async def _run(root: Path) -> dict[str, Any]:
    workspace = root / "hooks-ws"
    workspace.mkdir()
    os.environ.setdefault("FLOWBABY_MAX_QUEUED", "1000")  # 60 memories staged at once
    service = await FlowbabyService.open(workspace, rate_limit_per_minute=0)
    try:
        now = datetime.now(UTC)
        for index, (key, topic, context, decisions) in enumerate(MEMORIES):
            stamp = (now - timedelta(days=index)).isoformat().replace("+00:00", "Z")
            await call_json(
                service,
                "ingest",
                {
                    "topic": topic,
                    "context": context,
                    "decisions": decisions,
                    "agentName": "opencode" if index % 3 else "claude-code",
                    "metadata": {"topicId": f"m-{key}", "createdAt": stamp, "updatedAt": stamp},
                },
            )
        await service.flush_vectors()
        report: dict[str, Any] = {"memories": len(MEMORIES), "sessions": len(SESSIONS)}
        report["recall"] = await _recall(service)
        since = (now - timedelta(days=7)).isoformat()
        brief = await call_json(service, "briefing", {"agentName": "claude-code", "since": since})
        report["briefing"] = {
            "tokens": brief["tokens"],
            "budget": 800,
            "lines": len(brief["items"]),
            "memories": brief["memories"],
        }
        report["latency"] = {"ownerBuildingGraph": await _latency(workspace)}
        started = time.perf_counter()
        await service.wait_idle()  # the graph of the 60 memories is built: the owner is idle, as between stores
        report["latency"]["graphBuildSec"] = round(time.perf_counter() - started, 1)
        report["latency"]["ownerIdle"] = await _latency(workspace)
        report["capture"] = _capture_quality(workspace)
        report["capture"]["longSession"] = await _long_capture(service, root, workspace)
        return report
    finally:
        await service.close()


async def _recall(service: FlowbabyService) -> dict[str, Any]:
    answerable = [(s.prompt, s.answer) for s in SESSIONS if s.answer] + EXTRA_ANSWERABLE
    unanswerable = [s.prompt for s in SESSIONS if not s.answer] + EXTRA_UNANSWERABLE
    hits, tokens, misses = 0, [], []
    for prompt, key in answerable:
        reply = await call_json(service, "recall", {"query": prompt})
        if f"m-{key}" in reply["topicIds"]:
            hits += 1
        else:
            misses.append(prompt)
        if reply["text"]:
            tokens.append(reply["tokens"])
    quiet, injected = 0, []
    for prompt in unanswerable:
        reply = await call_json(service, "recall", {"query": prompt})
        if not reply["text"]:
            quiet += 1
        else:
            injected.append(prompt)
    return {
        "answerable": len(answerable),
        "hitRate": round(hits / len(answerable), 3),
        "unanswerable": len(unanswerable),
        "noInjectionRate": round(quiet / len(unanswerable), 3),
        "medianInjectedTokens": statistics.median(tokens) if tokens else 0,
        "maxInjectedTokens": max(tokens, default=0),
        "budget": 400,
        "missed": misses,
        "injectedForUnanswerable": injected,
    }


async def _time(command: list[str], payload: bytes) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    await process.communicate(payload)
    return (time.perf_counter() - started) * 1000


async def _latency(workspace: Path) -> dict[str, Any]:
    """The installed commands (python -S flowbaby/hook.py ...) against `true`, alternating."""
    import shlex

    prompts = [p for p, _ in EXTRA_ANSWERABLE]
    noop: list[float] = []
    interpreter: list[float] = []
    timed: dict[str, list[float]] = {"UserPromptSubmit": [], "SessionStart": []}
    for run in range(LATENCY_RUNS):
        noop.append(await _time(["true"], b"{}"))
        interpreter.append(await _time([sys.executable, "-S", "-c", "import json, socket"], b"{}"))
        for event, values in timed.items():
            payload = {"session_id": uuid.uuid4().hex, "cwd": str(workspace), "hook_event_name": event}
            payload |= {"prompt": prompts[run % len(prompts)], "source": "startup"}
            values.append(
                await _time(shlex.split(hook_command(event, workspace, "claude-code")), json.dumps(payload).encode())
            )
    result: dict[str, Any] = {
        "runs": LATENCY_RUNS,
        "noop": {"p50": _pct(noop, 0.5), "p95": _pct(noop, 0.95)},
        "pythonStart": {"p50": _pct(interpreter, 0.5), "p95": _pct(interpreter, 0.95)},
    }
    for event, values in timed.items():
        result[event] = {
            "p50": _pct(values, 0.5),
            "p95": _pct(values, 0.95),
            "addedP50": round(_pct(values, 0.5) - _pct(noop, 0.5), 1),
            "addedP95": round(_pct(values, 0.95) - _pct(noop, 0.95), 1),
        }
    return result


def _messages(session: Session, workspace: Path) -> list[Message]:
    messages = [Message("0", "user", 0, 0, [Block("text", session.prompt)])]
    messages.append(Message("1", "assistant", 1, 0, [Block("text", "Here is what the workspace memory says.")]))
    for index, (role, text, tool, path) in enumerate(session.turns, start=2):
        blocks = [Block("text", text)] if text else []
        if tool:
            blocks.append(Block("tool_call", str(workspace / path), tool))
        messages.append(Message(str(index), role, index, 0, blocks))  # type: ignore[arg-type]
    return messages


def _capture_quality(workspace: Path) -> dict[str, Any]:
    stated = found = edited = kept = extra = 0
    missed: list[str] = []
    for session in SESSIONS:
        if not session.decisions:
            continue
        got = distil(_messages(session, workspace), workspace=str(workspace), agent="claude-code")
        captured = [normal(d) for d in got.decisions]
        for decision in session.decisions:
            stated += 1
            if any(normal(decision) in text for text in captured):
                found += 1
            else:
                missed.append(decision)
        labels = [normal(d) for d in session.decisions]
        extra += sum(1 for text in captured if not any(label in text for label in labels))
        edited += len(session.edited)
        kept += sum(path in got.references for path in session.edited)
    return {
        "decisionSessions": sum(1 for s in SESSIONS if s.decisions),
        "decisionsStated": stated,
        "decisionRecall": round(found / stated, 3),
        "filesEdited": edited,
        "fileRecall": round(kept / edited, 3),
        "unlabelledDecisionsCaptured": extra,
        "missedDecisions": missed,
    }


async def _long_capture(service: FlowbabyService, root: Path, workspace: Path) -> dict[str, Any]:
    """One capture of a 3,000-message Claude Code transcript (user, assistant and tool turns)."""
    session_id = str(uuid.uuid4())
    folder = root / "claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(workspace))
    folder.mkdir(parents=True)
    transcript = folder / f"{session_id}.jsonl"
    decisive = [s for s in SESSIONS if s.decisions]
    with transcript.open("w", encoding="utf-8") as out:
        for index in range(LONG_SESSION_MESSAGES):
            session = decisive[(index // 6) % len(decisive)]
            stamp = (datetime(2026, 11, 1, tzinfo=UTC) + timedelta(seconds=index)).isoformat()
            base = {"cwd": str(workspace), "sessionId": session_id, "timestamp": stamp, "uuid": f"u{index}"}
            if index % 3 == 0:
                text = session.decisions[0] if index % 6 == 0 else f"Please continue with step {index}."
                record = {**base, "type": "user", "message": {"role": "user", "content": text}}
            else:
                content: list[dict[str, Any]] = [{"type": "text", "text": f"Working on step {index} now."}]
                if index % 3 == 2 and session.edited:
                    path = str(workspace / session.edited[0])
                    content.append(
                        {"type": "tool_use", "id": f"t{index}", "name": "Edit", "input": {"file_path": path}}
                    )
                record = {
                    **base,
                    "type": "assistant",
                    "message": {"id": f"m{index}", "role": "assistant", "content": content},
                }
            out.write(json.dumps(record) + "\n")
    started = time.perf_counter()
    reply = await call_json(
        service,
        "capture",
        {"source": "claude-code", "sessionId": session_id, "transcriptPath": str(transcript), "reason": "bench"},
    )
    seconds = time.perf_counter() - started
    again = await call_json(
        service,
        "capture",
        {"source": "claude-code", "sessionId": session_id, "transcriptPath": str(transcript), "reason": "bench"},
    )
    return {
        "messages": LONG_SESSION_MESSAGES,
        "captureSec": round(seconds, 3),
        "captured": reply["captured"],
        "decisions": reply.get("decisions"),
        "references": reply.get("references"),
        "repeatCaptured": again["captured"],
        "repeatReason": again["reason"],
    }


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(run_hooks(Path(tmp)), indent=2))
    sys.exit(0)
