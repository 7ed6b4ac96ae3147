"""`python -m bridge --workspace DIR`: the stdio bridge, same as `flowbaby bridge`."""

import os
import sys

# `python -m` put the working folder (the workspace, when an editor starts us there) first on
# sys.path: take it off before anything else is imported, unless it is flowbaby's own checkout.
# Best effort (INGEST_CONTRACT.md 9.1): `flowbaby bridge` and `python -P -m bridge` need none.
_here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()) and os.path.realpath(sys.path[0]) != _here:
    del sys.path[0]

import argparse  # noqa: E402

from flowbaby.cli import bridge_arguments, run_bridge  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_bridge(bridge_arguments(argparse.ArgumentParser(prog="python -m bridge")).parse_args()))
