"""`flowbaby import adr [DIR]` and `flowbaby import docs PATH...`: decisions and design docs the team
already wrote, staged as memories (graph.code). Works whether or not a bridge or server owns the
workspace (the records then go through it)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from flowbaby.memories_command import add_import_file_command, run_transfer_command

ADR_FOLDERS = ("doc/adr", "docs/adr", "docs/decisions", "docs/architecture/decisions", "adr", "decisions")
"""Where `import adr` looks without DIR, after adr-tools' `.adr-dir` file: adr-tools, MADR, others."""
CLOSE_GRACE_SEC = 10.0
"""How long the import's own service (no other owner) waits for the records' vectors at exit."""


def add_code_import_commands(actions: Any) -> None:
    """`adr` and `docs` under the `import` command's sub-commands."""
    adr = actions.add_parser("adr", help="import Architecture Decision Records (Nygard, MADR)")
    adr.add_argument(
        "folder", nargs="?", help="folder of ADRs (default: .adr-dir, doc/adr, docs/adr, docs/decisions...)"
    )
    adr.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    docs = actions.add_parser("docs", help="import markdown design docs, one memory per section")
    docs.add_argument("paths", nargs="+", metavar="PATH", help="markdown files, or folders of them")
    docs.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")


def add_import_command(commands: Any) -> None:
    parser = commands.add_parser("import", help="import ADRs, design docs or an export file as memories")
    actions = parser.add_subparsers(dest="import_command", required=True)
    add_code_import_commands(actions)
    add_import_file_command(actions)


def adr_folder(workspace: Path, given: str | None) -> Path | None:
    """DIR, else the folder `.adr-dir` names (adr-tools), else the first usual folder that exists.
    A committed `.adr-dir` that leads outside the repository is refused (INVALID_WORKSPACE_PATH)."""
    from graph.core.contract import ErrorCode, FlowbabyError

    if given:
        return Path(given)
    marker = workspace / ".adr-dir"
    if marker.is_file():
        if marker.is_symlink():
            raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"{marker}: refused: it is a symlink")
        folder = workspace / marker.read_text(encoding="utf-8", errors="replace").strip()
        try:
            real = folder.resolve()
            real.is_dir()  # raises for a name too long (a missing folder is refused later, by name)
        except (OSError, ValueError) as exc:  # a NUL, a name too long
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            message = f"{marker}: refused: not a folder name ({reason})"
            raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, message) from None
        if not real.is_relative_to(workspace):
            raise FlowbabyError(
                ErrorCode.INVALID_WORKSPACE_PATH,
                f"{marker}: refused: it names {real}, outside the repository {workspace}",
            )
        return folder
    return next((workspace / f for f in ADR_FOLDERS if (workspace / f).is_dir()), None)


async def _run(args: argparse.Namespace) -> int:
    from graph.api import EXIT_WORKSPACE_UNAVAILABLE, import_adrs, import_docs, open_service, within_repository
    from graph.core.contract import ContractFailure, ErrorCode, FlowbabyError

    workspace = Path(args.workspace).expanduser().resolve()  # the repository: nothing outside it is read
    try:  # before the workspace is opened: a path outside the repository changes nothing
        folder = adr_folder(workspace, args.folder) if args.import_command == "adr" else None
        for given in [folder] if folder is not None else [Path(p) for p in getattr(args, "paths", [])]:
            if given.exists():
                within_repository(given, workspace)
    except OSError as exc:  # a path given that is too long, or cannot be looked at
        error = FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"Cannot use the path: {exc.strerror}")
        print(json.dumps(error.to_response(), indent=2), file=sys.stderr)
        return 1
    except FlowbabyError as error:
        print(json.dumps(error.to_response(), indent=2), file=sys.stderr)
        return 1
    if args.import_command == "adr" and folder is None:
        print(f"flowbaby import adr: no ADR folder found under {workspace}; give one", file=sys.stderr)
        return 2
    service = await open_service("import", args.workspace, build_graph=False)
    if isinstance(service, FlowbabyError):
        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        base = service.paths.root
        if folder is not None:
            reply = await import_adrs(service, folder, base, root=workspace)
        else:
            reply = await import_docs(service, [Path(p) for p in args.paths], base, root=workspace)
    except ContractFailure as error:
        print(json.dumps(error.to_response(), indent=2), file=sys.stderr)
        return 1
    finally:
        await service.close(CLOSE_GRACE_SEC, hand_on=True)
    for problem in reply["skipped"]:
        print(f"flowbaby import {args.import_command}: skipped {problem}", file=sys.stderr)
    print(json.dumps(reply, indent=2, ensure_ascii=False))
    return 0


def run_import_command(args: argparse.Namespace) -> int:
    if args.import_command == "file":
        return run_transfer_command(args)
    import asyncio

    return asyncio.run(_run(args))
