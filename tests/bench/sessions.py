"""Session memory at Vapor's scale: import of a 3,000-message OpenCode session (Vapor's example
has 2,903), an update after 10 new messages, session search and current-session lookup p95s,
and the import's chunks/s next to MiniLM's raw encoding rate of the same chunks in this run (the
fp32 graph the memories use, and the session encoder: int8, short texts fp32). CPU seconds are
quoted next to wall seconds: on a shared machine the wall time measures the neighbours too."""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from graph.core.settings import default_model_path
from graph.search.embedder import Embedder
from graph.sessions.agent_api import SessionMemory
from graph.sessions.chunking import message_chunks
from graph.sessions.config import SessionSettings
from graph.sessions.encoder import SessionEncoder
from tests.support.session_fixtures import OpenCodeDb, text, tool

MESSAGES = 3000
FACT = "The payments webhook retries were capped at 7 because the Stripe sandbox throttles at 8 per minute."
COMMANDS = [
    "pytest -q tests/unit",
    "git diff --stat",
    "rg 'def handle' src",
    "make lint",
    "cat setup.cfg",
    "ls -la src",
]


def _lines(locomo: Path | None, seed: int) -> list[str]:
    """Real conversational text (LoCoMo turns) when the data is there, else generated sentences."""
    pool: list[str] = []
    if locomo is not None and locomo.is_file():
        for raw in json.loads(locomo.read_text()):
            for turns in raw["conversation"].values():
                if isinstance(turns, list):
                    pool += [turn["text"] for turn in turns if turn.get("text")]
    if not pool:
        rng = random.Random(seed)
        words = [
            "the",
            "cache",
            "ledger",
            "worker",
            "retry",
            "deploy",
            "queue",
            "schema",
            "index",
            "token",
            "request",
            "timeout",
            "build",
            "test",
        ]
        pool = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 40))) + "." for _ in range(2000)]
    return pool


def build_session(db: OpenCodeDb, sid: str, count: int, lines: list[str], rng: random.Random) -> None:
    """A coding session: user prompts, assistant answers, and tool calls with outputs of every size."""
    for n in range(count):
        if n == count // 3:
            db.turn(sid, "user", text(FACT))
        elif n % 3 == 0:
            db.turn(sid, "user", text(rng.choice(lines)))
        elif n % 2:
            output = "\n".join(rng.choice(lines) for _ in range(rng.randint(1, 12)))
            db.turn(sid, "assistant", text(rng.choice(lines)), tool("bash", rng.choice(COMMANDS), output))
        else:
            db.turn(sid, "assistant", text(" ".join(rng.choice(lines) for _ in range(rng.randint(1, 4)))))


def _p95(samples: list[float]) -> float:
    return round(statistics.quantiles(samples, n=20)[18], 2)


def run_sessions(root: Path, locomo: Path | None = None) -> dict[str, Any]:
    return asyncio.run(_run(root, locomo))


async def _run(root: Path, locomo: Path | None) -> dict[str, Any]:
    rng = random.Random(11)
    workspace = root / "ws"
    workspace.mkdir()
    lines = _lines(locomo, 11)
    db = OpenCodeDb(root / "opencode")
    db.session("ses_bench", workspace, "Bench session")
    started = time.perf_counter()
    build_session(db, "ses_bench", MESSAGES, lines, rng)
    build_sec = time.perf_counter() - started
    for n in range(20):  # other sessions of the workspace, for the lookup
        db.session(f"ses_other_{n}", workspace / f"pkg{n % 4}", f"Other {n}")
        db.turn(f"ses_other_{n}", "user", text(rng.choice(lines)))

    embedder = Embedder(default_model_path())
    embedder.load()
    encoder = SessionEncoder(embedder)
    encoder.encode(["warm up the int8 graph, a sentence longer than the short-text limit of the encoder"])
    settings = SessionSettings(opencode_dir=root / "opencode", claude_dir=root / "no-claude", watch=False)
    memory = SessionMemory(workspace, workspace / ".flowbaby" / "sessions", encoder, settings)
    index = await memory.index()
    info, _ = index.find("ses_bench")
    batch = index.sources["opencode"].read(info, None)
    texts = list(dict.fromkeys(c.text for m in batch.messages for c in message_chunks("ses_bench", m, False)))
    started, cpu = time.perf_counter(), time.process_time()
    embedder.encode(texts)
    raw_sec, raw_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    encoder.encode(texts)
    raw_session_sec, raw_session_cpu = time.perf_counter() - started, time.process_time() - cpu

    started, cpu = time.perf_counter(), time.process_time()
    imported = await memory.call("import", {"session_id": "ses_bench"})
    import_sec, import_cpu = time.perf_counter() - started, time.process_time() - cpu
    status = imported["index_status"]

    for n in range(10):
        db.turn("ses_bench", "user" if n % 2 == 0 else "assistant", text(rng.choice(lines)))
    dirty = (await memory.call("status", {"session_id": "ses_bench"}))["status"]
    started = time.perf_counter()
    updated = await memory.call("update", {"session_id": "ses_bench"})
    update_sec = time.perf_counter() - started

    queries = [rng.choice(lines)[:80] for _ in range(200)]
    search_ms, search_cpu_ms, encode_ms, own_ms = [], [], [], []
    for query in queries:  # interleaved with its baseline: one query embedding, in the same run
        started, cpu = time.perf_counter(), time.process_time()
        await memory.call("search", {"session_id": "ses_bench", "q": query, "limit": 20})
        search_ms.append((time.perf_counter() - started) * 1000)
        search_cpu_ms.append((time.process_time() - cpu) * 1000)
        started = time.perf_counter()
        vector = np.asarray(encoder.encode([query])[0], dtype=np.float32)
        encode_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()  # the search's own part: resolve, nearest chunks, their rows
        hits = index.vectors.nearest([index.resolve("ses_bench").key], vector, 20)
        index.store.chunks_by_id([eid for _, eid, _ in hits])
        own_ms.append((time.perf_counter() - started) * 1000)
    lookup_ms = []
    for n in range(200):
        started = time.perf_counter()
        await memory.call("current", {"cwd": str(workspace / f"pkg{n % 4}" / "deep")})
        lookup_ms.append((time.perf_counter() - started) * 1000)
    hit = await memory.call("search", {"session_id": "ses_bench", "q": "why are webhook retries capped", "limit": 10})
    rank = next((i + 1 for i, r in enumerate(hit["results"]) if "capped at 7" in r["chunk_text"]), None)
    await memory.close()
    db.close()
    chunks = status["chunks"]
    return {
        "messages": MESSAGES,
        "chunks": chunks,
        "buildSourceSec": round(build_sec, 2),
        "importSec": round(import_sec, 2),
        "importCpuSec": round(import_cpu, 2),
        "importChunksPerSec": round(chunks / import_sec, 1),
        "uniqueChunkTexts": len(texts),
        "rawMiniLMChunksPerSec": round(len(texts) / raw_sec, 1),
        "rawEncodeSec": round(raw_sec, 2),
        "rawEncodeCpuSec": round(raw_cpu, 2),
        "rawSessionEncoderChunksPerSec": round(len(texts) / raw_session_sec, 1),
        "rawSessionEncodeSec": round(raw_session_sec, 2),
        "rawSessionEncodeCpuSec": round(raw_session_cpu, 2),
        "importOverRawSessionEncode": round(import_sec / raw_session_sec, 3),
        "loadAverage1m": round(os.getloadavg()[0], 1),
        "statusAfterImport": status["status"],
        "statusAfter10NewMessages": dirty,
        "updateSec": round(update_sec, 3),
        "updateReadMessages": updated["messages"],
        "updateEmbeddedChunks": updated["embedded"],
        "searchP50Ms": round(statistics.median(search_ms), 2),
        "searchP95Ms": _p95(search_ms),
        "searchCpuP50Ms": round(statistics.median(search_cpu_ms), 2),
        "searchCpuP95Ms": _p95(search_cpu_ms),
        "queryEmbeddingP50Ms": round(statistics.median(encode_ms), 2),
        "queryEmbeddingP95Ms": _p95(encode_ms),
        "searchWithoutEmbeddingP50Ms": round(statistics.median(own_ms), 2),
        "searchWithoutEmbeddingP95Ms": _p95(own_ms),
        "currentSessionP50Ms": round(statistics.median(lookup_ms), 2),
        "currentSessionP95Ms": _p95(lookup_ms),
        "singleMentionFactRank": rank,
        "targets": {"importSec": 60, "updateSec": 2, "searchP95Ms": 50, "currentSessionP95Ms": 20},
    }
