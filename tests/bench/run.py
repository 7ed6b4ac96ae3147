"""`make bench`: runs every benchmark and writes one JSON report (and prints it)."""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from tests.bench.ingest import run_ingest_benchmarks


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.run")
    parser.add_argument("--out", default="bench-results.json")
    args = parser.parse_args()
    report = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "ingest": run_ingest_benchmarks(),
    }
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
