"""`make demo`: the main job end to end on the embedded default.

Creates a demo workspace, starts the bridge as a subprocess, sends it the example
summaries over JSON-RPC, shows progress while the graph builds in the background,
then prints what was built.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from bridge.client import BridgeClient
from flowbaby.demo_data import DEMO_QUESTIONS, DEMO_SUMMARIES
from flowbaby.next_steps import flowbaby_command
from graph.api import team_database_url
from graph.core.contract import ErrorCode


def _say(text: str = "") -> None:
    print(text, flush=True)


def run_demo(workspace: str, *, fresh: bool = False) -> int:
    root = Path(workspace).resolve()
    if fresh and (root / ".flowbaby").exists():
        shutil.rmtree(root / ".flowbaby")
    root.mkdir(parents=True, exist_ok=True)
    _say(f"flowbaby demo: workspace {root}")
    # The demo asks its questions in a burst; the operator switch lifts the per-minute limit.
    client = BridgeClient(root, stderr=sys.stderr, extra_args=["--rate-limit-per-minute", "0"])
    try:
        health = client.result("health", timeout=30)
        _say(f"bridge up in {time.perf_counter() - client.started:.2f}s (pid {health['pid']}, {health['llm']})")
        _say(f"\ningesting {len(DEMO_SUMMARIES)} summaries through ingestForAgent:")
        told = False
        for summary in DEMO_SUMMARIES:
            waited = 0.0
            while True:
                started = time.perf_counter()
                reply = client.result("ingestForAgent", summary)
                if reply.get("errorCode") != ErrorCode.BACKLOG.value:
                    break
                if not told:  # the bridge's 429 is the expected back-pressure, not a failure
                    _say(
                        "  (the background queue is full: graph building runs a few summaries at a time, and the "
                        f"bridge refuses more with 429_FLOWBABY_BACKLOG, retryAfterSec {reply.get('retryAfterSec')}. "
                        "An agent would wait that long; the demo retries every second until a build finishes.)"
                    )
                    told = True
                waited += 1.0
                time.sleep(1.0)
            if waited:
                _say(f"  queue had room again after {waited:.0f}s:")
            if not reply["success"]:
                _say(f"  FAILED {summary['metadata']['topicId']}: {reply['errorCode']} {reply['error']}")
                return 1
            metrics = reply["ingestion_metrics"]
            superseded = " (supersedes an earlier version)" if metrics["supersededMemoryId"] else ""
            _say(
                f"  staged in {(time.perf_counter() - started) * 1000:6.1f} ms  v{metrics['version']} "
                f"{summary['metadata']['topicId']}: {summary['topic']}{superseded}"
            )
        _say("\nbuilding the graph in the background (cognee add + cognify, offline extractor):")
        last = None
        while True:
            counts = client.result("backgroundStatus", {})["counts"]
            if counts != last:
                _say("  " + ", ".join(f"{state} {n}" for state, n in sorted(counts.items())))
                last = counts
            if not counts.get("pending") and not counts.get("running"):
                break
            time.sleep(1)
        stats = client.result("graphStats")
        _say(f"\ngraph: {stats['memories']} memories, {stats['entities']} entities, {stats['relations']} relations")
        _say("top entities:")
        for entity in stats["topEntities"]:
            name, kind, degree = entity["name"], entity["type"], entity["degree"]
            _say(f"  {name:<40} {kind:<12} degree {degree:>3}, in {entity['memories']} memories")
        for question, why in DEMO_QUESTIONS:
            _say(f"\n{'=' * 78}\nQ: {question}\n   ({why})")
            started = time.perf_counter()
            reply = client.result("retrieveMemory", {"query": question, "maxResults": 3, "maxTokens": 1500})
            if not reply["success"]:
                _say(f"  FAILED: {reply['errorCode']} {reply['message']}")
                return 1
            _say(f"   answered in {(time.perf_counter() - started) * 1000:.0f} ms, {reply['tokensUsed']} tokens\n")
            _say(reply["markdown"])
        fb = flowbaby_command()
        question = '"how long do sessions stay cached"'
        _say(f"\n{'=' * 78}\nsearch it yourself:\n  {fb} search {question} --workspace {workspace}")
        if not team_database_url():  # a team namespace's graph is read through a serving process
            _say(
                f"look at the graph:\n  {fb} graph stats --workspace {workspace}\n"
                f"  {fb} graph show --workspace {workspace} --topic redis-session-cache --out graph.png\n"
                f"  {fb} graph export --workspace {workspace} --format html --out graph.html"
            )
        if fb != "flowbaby":
            _say("(`make install` puts flowbaby on your PATH)")
        return 1 if counts.get("failed") else 0
    finally:
        client.close()
