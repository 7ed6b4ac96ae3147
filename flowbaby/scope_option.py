"""`--scope`: which store a memory command means, the project's or the user's (docs/contract/21-user-scope.md)."""

from __future__ import annotations

import argparse
from typing import Any

SCOPE_HELP = "the project's store (default) or your user store, which every project reads"


def scope_argument(parser: argparse.ArgumentParser, *choices: str) -> None:
    parser.add_argument("--scope", choices=choices or ("project", "user"), default="project", help=SCOPE_HELP)


def scoped(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    """`params` with the --scope given; left out for the project's, which every owner reads as the default."""
    scope = getattr(args, "scope", None) or "project"
    return params if scope == "project" else {**params, "scope": scope}
