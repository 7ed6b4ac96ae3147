"""`python -m bridge --workspace DIR`: the stdio bridge, same as `flowbaby bridge`."""

import argparse
import sys

from flowbaby.cli import bridge_arguments, run_bridge

if __name__ == "__main__":
    sys.exit(run_bridge(bridge_arguments(argparse.ArgumentParser(prog="python -m bridge")).parse_args()))
