"""pytest plugin: CPU seconds per test, its own and its waited-for children's, as JSON lines.

The suite is CPU-bound on the 2-core machines (issue 25 item 8): wall time drops only where CPU
does, and CPU seconds, unlike wall seconds, barely move when the machine is busy. Load it with
`-p tests.support.cpu_profile` and name the output in FLOWBABY_CPU_PROFILE (default
`cpu-profile.jsonl`); `python -m tests.support.cpu_profile FILE [BASELINE]` sums it per file.
Children count once waited for (a bridge closed at teardown is); detached ones (a finisher) are not.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import pytest

OUTPUT_ENV = "FLOWBABY_CPU_PROFILE"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    own, children = _cpu()
    started = time.monotonic()
    yield
    own_after, children_after = _cpu()
    row = {
        "id": item.nodeid,
        "wall": round(time.monotonic() - started, 2),
        "self": round(own_after - own, 2),
        "children": round(children_after - children, 2),
    }
    with open(os.environ.get(OUTPUT_ENV, "cpu-profile.jsonl"), "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def per_file(path: Path) -> dict[str, float]:
    """CPU seconds (own + children) per test file."""
    totals: dict[str, float] = defaultdict(float)
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        totals[row["id"].split("::")[0]] += row["self"] + row["children"]
    return totals


def main() -> None:
    profile = per_file(Path(sys.argv[1]))
    baseline = per_file(Path(sys.argv[2])) if len(sys.argv) > 2 else {}
    against = f" (baseline {sum(baseline.values()):.0f})" if baseline else ""
    print(f"total {sum(profile.values()):.0f} CPU-s{against}")
    for name, seconds in sorted(profile.items(), key=lambda kv: -kv[1]):
        before = f" {baseline.get(name, 0.0):7.1f} ->" if baseline else ""
        print(f"{name:64}{before} {seconds:7.1f}")


if __name__ == "__main__":
    main()
