"""Session search quality: recall of evidence turns through `sessionsSearchAll`, against the same
run's baselines over the same turns, with a lane ablation and abstention rates.

Two sets:
- BEAM's 500K chats (github mohammadtavakoli78/BEAM, `chats/500K/<n>/chat.json` and
  `probing_questions/probing_questions.json`; MIT licence): each chat becomes one Claude Code
  transcript in its own workspace (user turns keep BEAM's message id as record uuid, assistant
  turns as message id), and each probing question with `source_chat_ids` is asked of it. BEAM's
  100K chats are held out: this bench never reads them.
- The labelled coding sessions of tests/support/fixtures/sessions_coding.json (identifiers,
  commands, errors, paths, paraphrases and unanswerable questions), written before any tuning.

Metric: recall@k of evidence turns, the share of a question's evidence turns among the first k
turns returned, averaged over questions (overall and per BEAM category). Baselines, computed from
the index's own turns and chunk vectors (the session encoder, int8 MiniLM): BM25 over each turn's
whole text, MiniLM max-sim over its 480-character chunks, and RRF of the two (k = 60). The lane
ablation asks the index with one lane at a time, and once without neighbour evidence. Abstention:
with `abstain: true`, the share of answerable questions that abstain (false) and of unanswerable ones
that do (true). `--first` and `--batches` pick other chats (the weights were chosen on chats 1-6) and
shorter ones (each chat's first batches).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from graph.core.lexical import LexicalIndex
from graph.sessions.agent_api import SessionMemory
from graph.sessions.config import SessionSettings
from graph.sessions.index import SessionIndex
from graph.sessions.ranking import LANES

KS = (1, 5, 10)
DEFAULT_BEAM = Path(
    os.environ.get("FLOWBABY_BEAM_500K", Path(__file__).resolve().parents[3] / "shared" / "bench" / "beam-500k")
)
CODING = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "sessions_coding.json"
T0 = datetime(2024, 1, 2, 9, 0, tzinfo=UTC)


# -- writing sessions as Claude Code transcripts -----------------------------------------
def _line(cwd: str, session: str, kind: str, message: dict[str, Any], stamp: datetime, uid: str) -> str:
    return json.dumps(
        {
            "type": kind,
            "uuid": uid,
            "parentUuid": None,
            "sessionId": session,
            "cwd": cwd,
            "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "message": message,
        }
    )


def transcript_path(config: Path, cwd: Path, session: str) -> Path:
    from graph.sessions.sources.claude_code import project_folder_name

    return config / "projects" / project_folder_name(str(cwd)) / f"{session}.jsonl"


def write_beam(chat: list[dict[str, Any]], config: Path, cwd: Path, session: str) -> None:
    """A BEAM chat as one transcript: turn `id` becomes the user record's uuid or the assistant
    message's id (`beam-<id>`), one minute apart."""
    path = transcript_path(config, cwd, session)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    n = 0
    for batch in chat:
        for pair in batch["turns"]:
            for message in pair:
                n += 1
                stamp = T0 + timedelta(minutes=n)
                mid = f"beam-{message['id']}"
                if message["role"] == "user":
                    lines.append(
                        _line(str(cwd), session, "user", {"role": "user", "content": message["content"]}, stamp, mid)
                    )
                else:
                    body = {"id": mid, "role": "assistant", "content": [{"type": "text", "text": message["content"]}]}
                    lines.append(_line(str(cwd), session, "assistant", body, stamp, str(uuid.uuid4())))
    path.write_text("\n".join(lines) + "\n")


def write_coding(session: dict[str, Any], config: Path, cwd: Path) -> None:
    """A labelled coding session: user prompts, assistant text, tool calls and their results; each
    turn's label becomes its uuid or message id, tool results follow their call."""
    sid = session["id"]
    path = transcript_path(config, cwd, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, turn in enumerate(session["turns"]):
        stamp = T0 + timedelta(days=session.get("day", 0), minutes=2 * n)
        label = turn["label"]
        if turn["role"] == "user":
            lines.append(_line(str(cwd), sid, "user", {"role": "user", "content": turn["text"]}, stamp, label))
            continue
        blocks: list[dict[str, Any]] = []
        if turn.get("text"):
            blocks.append({"type": "text", "text": turn["text"]})
        results = []
        for k, call in enumerate(turn.get("tools", [])):
            tid = f"toolu_{label}_{k}"
            blocks.append({"type": "tool_use", "id": tid, "name": call["name"], "input": call["input"]})
            results.append((tid, call.get("output", "")))
        for block in blocks:
            message = {"id": label, "role": "assistant", "content": [block]}
            lines.append(_line(str(cwd), sid, "assistant", message, stamp, str(uuid.uuid4())))
        for k, (tid, output) in enumerate(results):
            content = [{"type": "tool_result", "tool_use_id": tid, "content": output}]
            lines.append(
                _line(str(cwd), sid, "user", {"role": "user", "content": content}, stamp, f"{label}-result-{k}")
            )
    path.write_text("\n".join(lines) + "\n")


# -- scoring ----------------------------------------------------------------------------
def recall(ranked: list[str], evidence: set[str], k: int) -> float:
    """The share of the evidence turns among the first k distinct labels (a tool call's result is
    its own turn but carries the call's label)."""
    return len(evidence & set(list(dict.fromkeys(ranked))[:k])) / len(evidence)


def _rrf(*rankings: list[str], k: int = 60) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores, key=lambda item: -scores[item])


class Baselines:
    """BM25 over whole turns and MiniLM max-sim over their chunks, from the index's own rows."""

    def __init__(self, index: SessionIndex, keys: list[str], turn_of: Any) -> None:
        self.index, self.keys, self.turn_of = index, keys, turn_of
        self.lexical = LexicalIndex()
        for key in keys:
            mids = [mid for mid, *_ in index.store.turns(key)]
            for mid, text in index.store.turn_texts(key, mids).items():
                self.lexical.add(f"{key}\x00{mid}", text)
        self.total = sum(index.vectors.count(key) for key in keys)

    def bm25(self, query: str) -> list[str]:
        hits = self.lexical.search(query, 50)
        return [self.turn_of(doc.split("\x00", 1)[1]) for doc in hits]

    def maxsim(self, query: str) -> list[str]:
        vector = np.asarray(self.index.encoder.encode([query])[0], dtype=np.float32)
        hits = self.index.vectors.nearest(self.keys, vector, self.total)
        rows = self.index.store.chunks_by_id([eid for _, eid, _ in hits[:400]])
        ranked: list[str] = []
        for _, eid, _ in hits[:400]:
            turn = self.turn_of(str(rows[eid]["message_id"])) if eid in rows else None
            if turn is not None and turn not in ranked:
                ranked.append(turn)
            if len(ranked) >= 50:
                break
        return ranked


def _table_rows(runs: dict[str, list[list[str]]], evidence: list[set[str]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            f"R@{k}": round(100 * statistics.fmean(recall(r, e, k) for r, e in zip(ranked, evidence, strict=True)), 1)
            for k in KS
        }
        for name, ranked in runs.items()
    }


async def _ask(
    memory: SessionMemory, index: SessionIndex, keys: list[str], questions: list[dict[str, Any]], turn_of: Any
) -> dict[str, list[list[str]]]:
    """Every system's ranked turn labels per question."""
    base = Baselines(index, keys, turn_of)
    runs: dict[str, list[list[str]]] = {
        "flowbaby sessionsSearchAll": [],
        "BM25 over the turn": [],
        "MiniLM max-sim over chunks": [],
        "RRF(BM25, MiniLM)": [],
        "lanes: vector only": [],
        "lanes: lexical only": [],
        "without neighbour evidence": [],
    }
    for q in questions:
        reply = await memory.call("search_all", {"q": q["query"], "limit": 10})
        runs["flowbaby sessionsSearchAll"].append([turn_of(r["turn_source_id"]) for r in reply["results"]])
        bm25, maxsim = base.bm25(q["query"]), base.maxsim(q["query"])
        runs["BM25 over the turn"].append(bm25)
        runs["MiniLM max-sim over chunks"].append(maxsim)
        runs["RRF(BM25, MiniLM)"].append(_rrf(bm25, maxsim))
        for lane in sorted(LANES):
            found = index.search(keys, q["query"], 10, lanes=frozenset({lane})).results
            runs[f"lanes: {lane} only"].append([turn_of(r["turn_source_id"]) for r in found])
        alone = index.search(keys, q["query"], 10, neighbours=False).results
        runs["without neighbour evidence"].append([turn_of(r["turn_source_id"]) for r in alone])
    return runs


async def _abstentions(memory: SessionMemory, queries: list[str]) -> float:
    """The share of these queries that abstain."""
    if not queries:
        return float("nan")
    abstained = 0
    for query in queries:
        reply = await memory.call("search_all", {"q": query, "limit": 10, "abstain": True})
        abstained += bool(reply.get("abstained"))
    return round(100 * abstained / len(queries), 1)


def _open(workspace: Path, config: Path, encoder: Any) -> SessionMemory:
    settings = SessionSettings(opencode=False, opencode_dir=config / "none", claude_dir=config, watch=False)
    return SessionMemory(workspace, workspace / ".flowbaby" / "sessions", encoder, settings)


def evidence_ids(ids: Any) -> set[str]:
    """A question's `source_chat_ids`, flattened: a list, a dict of lists (contradiction, temporal), or
    lists of lists (some event-ordering questions)."""
    if isinstance(ids, dict):
        return {i for part in ids.values() for i in evidence_ids(part)}
    if isinstance(ids, list):
        return {i for part in ids for i in evidence_ids(part)}
    return {str(ids)}


def message_ids(chat: list[dict[str, Any]]) -> set[str]:
    return {str(message["id"]) for batch in chat for pair in batch["turns"] for message in pair}


async def _beam(
    root: Path, data: Path, chats: int, encoder: Any, first: int = 1, batches: int | None = None
) -> dict[str, Any]:
    """`batches`: only each chat's first batches (BEAM's 500K chats have ten of ~80 messages), and only
    the questions whose evidence lies in them: a chat of about the 100K chats' length, from dev data."""
    names = sorted((p.name for p in data.iterdir() if (p / "chat.json").is_file()), key=int)
    names = [name for name in names if int(name) >= first][:chats]
    per_question: list[tuple[str, set[str]]] = []
    runs: dict[str, list[list[str]]] = {}
    unanswerable: list[str] = []
    answerable: list[str] = []
    false_abstained = true_abstained = 0.0
    import_sec = 0.0
    for name in names:
        home = root / (f"beam-{name}" if batches is None else f"beam-{name}-b{batches}")
        workspace, config = home / "ws", home / "claude"
        workspace.mkdir(parents=True, exist_ok=True)
        session = f"beam-chat-{name}"
        chat = json.loads((data / name / "chat.json").read_text())[:batches]
        present = message_ids(chat)
        if not transcript_path(config, workspace, session).is_file():
            write_beam(chat, config, workspace, session)
        memory = _open(workspace, config, encoder)
        index = await memory.index()
        started = time.perf_counter()
        await memory.call("import", {"session_id": session})
        import_sec += time.perf_counter() - started
        probing = json.loads((data / name / "probing_questions" / "probing_questions.json").read_text())
        questions = []
        for category, items in probing.items():
            for item in items:
                ids = item.get("source_chat_ids")
                if category == "abstention":
                    unanswerable.append(item["question"])
                evidence = evidence_ids(ids) if ids else set()
                if not evidence or not evidence <= present:
                    continue
                questions.append({"query": item["question"], "category": category, "evidence": evidence})
        keys = index.keys_under(None)
        chat_runs = await _ask(memory, index, keys, questions, lambda mid: mid.removeprefix("beam-"))
        for system, ranked in chat_runs.items():
            runs.setdefault(system, []).extend(ranked)
        per_question += [(q["category"], q["evidence"]) for q in questions]
        answerable += [q["query"] for q in questions]
        chat_unanswerable = [i["question"] for i in probing.get("abstention", [])]
        false_abstained += (await _abstentions(memory, [q["query"] for q in questions])) * len(questions)
        true_abstained += (
            (await _abstentions(memory, chat_unanswerable)) * len(chat_unanswerable) if chat_unanswerable else 0
        )
        await memory.close()
    evidence = [e for _, e in per_question]
    table = _table_rows(runs, evidence)
    categories = sorted({c for c, _ in per_question})
    by_category = {
        c: {
            system: round(
                100
                * statistics.fmean(recall(r, e, 5) for r, (cc, e) in zip(ranked, per_question, strict=True) if cc == c),
                1,
            )
            for system, ranked in runs.items()
        }
        for c in categories
    }
    return {
        "chats": names,
        "questions": len(per_question),
        "importSec": round(import_sec, 1),
        "recall": table,
        "recallAt5ByCategory": by_category,
        "abstention": {
            "falseAbstentionPct": round(false_abstained / max(1, len(answerable)), 1),
            "trueAbstentionPct": round(true_abstained / max(1, len(unanswerable)), 1),
            "answerable": len(answerable),
            "unanswerable": len(unanswerable),
        },
    }


async def _coding(root: Path, encoder: Any) -> dict[str, Any]:
    fixture = json.loads(CODING.read_text())
    workspace, config = root / "coding" / "ws", root / "coding" / "claude"
    workspace.mkdir(parents=True, exist_ok=True)
    for session in fixture["sessions"]:
        write_coding(session, config, workspace / session.get("folder", ""))
    memory = _open(workspace, config, encoder)
    index = await memory.index()
    for session in fixture["sessions"]:
        await memory.call("import", {"session_id": session["id"]})
    keys = index.keys_under(None)
    answerable = [q for q in fixture["questions"] if q["evidence"]]
    questions = [{"query": q["query"], "evidence": set(q["evidence"])} for q in answerable]
    runs = await _ask(memory, index, keys, questions, lambda mid: mid.split("-result-")[0])
    unanswerable = [q["query"] for q in fixture["questions"] if not q["evidence"]]
    result = {
        "sessions": len(fixture["sessions"]),
        "questions": len(questions),
        "recall": _table_rows(runs, [q["evidence"] for q in questions]),
        "recallAt5ByKind": {
            kind: {
                system: round(
                    100
                    * statistics.fmean(
                        recall(r, set(q["evidence"]), 5)
                        for r, q in zip(ranked, answerable, strict=True)
                        if q["kind"] == kind
                    ),
                    1,
                )
                for system, ranked in runs.items()
            }
            for kind in sorted({q["kind"] for q in answerable})
        },
        "abstention": {
            "falseAbstentionPct": await _abstentions(memory, [q["query"] for q in questions]),
            "trueAbstentionPct": await _abstentions(memory, unanswerable),
            "answerable": len(questions),
            "unanswerable": len(unanswerable),
        },
    }
    await memory.close()
    return result


def run_sessions_quality(
    root: Path, beam: Path = DEFAULT_BEAM, chats: int = 2, first: int = 1, batches: int | None = None
) -> dict[str, Any]:
    """`chats`: how many BEAM 500K chats, from chat `first` on (in file order; each is ~800 turns, a minute
    or more to embed). Weights were chosen on chats 1-6: a later `first` gives a check set."""
    from graph.core.settings import default_model_path
    from graph.search.embedder import Embedder
    from graph.sessions.encoder import SessionEncoder

    embedder = Embedder(default_model_path())
    embedder.load()
    encoder = SessionEncoder(embedder)
    report: dict[str, Any] = {
        "coding": asyncio.run(_coding(root, encoder)) if CODING.is_file() else {"skipped": "no fixture"}
    }
    if beam.is_dir() and chats > 0:
        report["beam500k"] = asyncio.run(_beam(root, beam, chats, encoder, first, batches))
    else:
        report["beam500k"] = {"skipped": f"no BEAM 500K chats at {beam}" if chats else "chats = 0"}
    return report


def recall_table(rows: dict[str, dict[str, float]]) -> str:
    lines = ["| system (same turns, same run) | R@1 | R@5 | R@10 |", "|---|---|---|---|"]
    lines += [f"| {name} | {row['R@1']} | {row['R@5']} | {row['R@10']} |" for name, row in rows.items()]
    return "\n".join(lines)


if __name__ == "__main__":  # development: a kept root, so chats are embedded once
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--beam", type=Path, default=DEFAULT_BEAM)
    parser.add_argument("--chats", type=int, default=2)
    parser.add_argument("--first", type=int, default=1, help="the first BEAM chat's number")
    parser.add_argument("--batches", type=int, default=None, help="only each chat's first batches")
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    out = run_sessions_quality(args.root, args.beam, args.chats, args.first, args.batches)
    print(json.dumps(out, indent=2))
    for part in ("coding", "beam500k"):
        if "recall" in out[part]:
            print(f"\n{part}\n" + recall_table(out[part]["recall"]))
