"""What checking freshness adds to a retrieval of 10 results (issue 30: p95 at most 5 ms warm).

A real git repository (400 files, 600 commits with edits, renames and deletions) and 15 memories
(the window a 10-result retrieval checks: maxResults + FRESHNESS_WINDOW), each naming a file, a
`path:symbol`, a folder and a bare symbol. Warm: the same HEAD, so no git process runs; cold: the
first check after a new commit (one `git log`, one `git grep` for every bare symbol). Half the memories
were made on a branch the reader lacks: each distinct commit costs one `git merge-base` when cold. Wall times on a
shared machine carry its load; the thread's CPU time is given beside them."""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from graph.code.branches import Ancestry, checkout
from graph.code.freshness import FreshnessChecker
from graph.search.retrieval import FRESHNESS_WINDOW
from tests.bench.ingest import percentile

FILES = 400
COMMITS = 600
RESULTS = 10


def _git(root: Path, *args: str, date: str | None = None) -> None:
    env = {**os.environ}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def build_repo(root: Path) -> list[str]:
    """The repository, its history spread over 2026 (memories are written mid-year)."""
    rng = random.Random(30)
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "bench@example.com")
    _git(root, "config", "user.name", "Bench")
    paths = [f"pkg{i % 20}/module_{i}.py" for i in range(FILES)]
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"class Thing{path.split('_')[-1][:-3]}:\n    def run(self):\n        return 1\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "initial", date="2026-01-01T00:00:00Z")
    live = list(paths)
    for n in range(COMMITS):
        date = f"2026-{1 + n * 11 // COMMITS:02d}-{1 + n % 27:02d}T12:00:00Z"
        path = rng.choice(live)
        roll = rng.random()
        if roll < 0.05 and len(live) > FILES // 2:
            target = path.replace(".py", "_moved.py")
            _git(root, "mv", path, target)
            live[live.index(path)] = target
        elif roll < 0.08 and len(live) > FILES // 2:
            _git(root, "rm", "-q", path)
            live.remove(path)
        else:
            with (root / path).open("a") as handle:
                handle.write(f"# edit {n}\n")
            _git(root, "add", path)
        _git(root, "commit", "-qm", f"change {n}", date=date)
    _git(root, "checkout", "-q", "-b", "side")  # a branch the memories' reader (main) does not contain
    (root / "SIDE.md").write_text("side\n")
    _git(root, "add", "SIDE.md")
    _git(root, "commit", "-qm", "side work", date="2026-11-01T00:00:00Z")
    _git(root, "checkout", "-q", "main")
    return paths


def run_freshness(root: Path, rounds: int = 300) -> dict[str, Any]:
    repo = root / "repo"
    paths = build_repo(repo)
    rng = random.Random(7)
    window = RESULTS + FRESHNESS_WINDOW
    memories = []
    for _ in range(window):
        a, b = rng.sample(paths, 2)
        number = a.split("_")[-1][:-3]
        memories.append(([a, f"{b}:run", a.split("/")[0] + "/", f"Thing{number}.run"], "2026-06-01T00:00:00.000Z"))
    side = subprocess.run(["git", "rev-parse", "side"], cwd=repo, capture_output=True, text=True, check=True)
    commits = [side.stdout.strip() if i % 2 else "" for i in range(window)]
    reader = checkout(repo)
    assert reader is not None and reader.commit is not None
    commits = [c or reader.commit for c in commits]
    checker, ancestry = FreshnessChecker(repo), Ancestry()

    def added_work() -> list[bool | None]:
        """What retrieve adds for its window: freshness, then the unmerged check per memory."""
        checker.check_many(memories)
        return [ancestry.merged(commit, reader) for commit in commits]

    started = time.perf_counter()
    first = checker.check_many(memories)
    merged = [ancestry.merged(commit, reader) for commit in commits]
    cold_ms = (time.perf_counter() - started) * 1000
    cold_calls = checker.git_calls + ancestry.git_calls
    warm, cpu = [], []
    for _ in range(rounds):
        started, started_cpu = time.perf_counter(), time.thread_time()
        added_work()
        warm.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    warm_calls = checker.git_calls + ancestry.git_calls - cold_calls
    states: dict[str, int] = {}
    for fresh in first:
        for ref in fresh.references:
            states[ref.state] = states.get(ref.state, 0) + 1
    # a new HEAD: the next check reads the history again
    (repo / "NEW.md").write_text("new\n")
    _git(repo, "add", "NEW.md")
    _git(repo, "commit", "-qm", "new head", date="2026-12-01T00:00:00Z")
    started = time.perf_counter()
    added_work()
    new_head_ms = (time.perf_counter() - started) * 1000
    return {
        "repository": {"files": FILES, "commits": COMMITS + 1},
        "memoriesChecked": window,
        "referencesPerMemory": 4,
        "referenceStates": states,
        "unmergedMemories": merged.count(False),
        "coldMs": round(cold_ms, 2),
        "coldGitCalls": cold_calls,
        "newHeadMs": round(new_head_ms, 2),
        "warmMs": {
            "p50": round(statistics.median(warm), 3),
            "p95": round(percentile(warm, 0.95), 3),
            "max": round(max(warm), 3),
        },
        "warmCpuMs": {"p50": round(statistics.median(cpu), 3), "p95": round(percentile(cpu, 0.95), 3)},
        "loadAverage": os.getloadavg()[0],
        "warmGitCalls": warm_calls,
        "budgetMs": 5.0,
    }
