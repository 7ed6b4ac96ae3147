"""`flowbaby graph export|stats|show`: read-only views of a workspace's graph.

They read through WorkspaceGraph, which needs no workspace lock, so they work
while a bridge or server owns the workspace.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from graph.inspection.names import EXPORT_FORMATS, TopicNotFound

EXIT_USAGE = 2
EXIT_NOT_A_WORKSPACE = 3
"""The folder holds no .flowbaby/ (the exit code of an unavailable workspace elsewhere)."""


def add_graph_commands(commands: Any) -> None:
    graph = commands.add_parser("graph", help="export, count or draw a workspace's graph")
    actions = graph.add_subparsers(dest="graph_command", required=True)
    export = actions.add_parser("export", help="write the graph as GraphML, node-link JSON or offline HTML")
    export.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    export.add_argument("--format", choices=EXPORT_FORMATS, default="graphml", help="file format")
    export.add_argument("--out", help="file to write (default: flowbaby-graph.<format> in the current folder)")
    export.add_argument("--topic", help="only this topicId's neighbourhood")
    export.add_argument("--hops", type=int, choices=(1, 2, 3), default=2, help="neighbourhood radius with --topic")
    stats = actions.add_parser("stats", help="counts, top entities, components, memories without a graph")
    stats.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    stats.add_argument("--top", type=int, default=10, help="how many entities and components to list")
    stats.add_argument("--json", action="store_true", help="print JSON instead of text")
    show = actions.add_parser("show", help="draw one memory's neighbourhood as a PNG")
    show.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    show.add_argument("--topic", required=True, help="topicId of the memory")
    show.add_argument("--hops", type=int, choices=(1, 2, 3), default=2, help="neighbourhood radius")
    show.add_argument("--out", required=True, help="PNG file to write")


def run_graph_command(args: argparse.Namespace) -> int:
    from graph.api import WorkspaceGraph, WorkspacePaths, check_data_folder
    from graph.core.contract import FlowbabyError

    try:
        paths = WorkspacePaths(Path(args.workspace).expanduser().resolve())
        if not paths.data.is_dir():
            print(
                f"flowbaby graph: {paths.root} is not a flowbaby workspace (it has no {paths.data.name}/ folder): "
                "run it in a project where flowbaby ran, or pass --workspace",
                file=sys.stderr,
            )
            return EXIT_NOT_A_WORKSPACE
        check_data_folder(paths)  # read only, but never through a committed link
        view = WorkspaceGraph.load(paths)
        if args.graph_command == "export":
            out = Path(args.out or f"flowbaby-graph.{args.format}")
            view.export(args.format, out, topic_id=args.topic, hops=args.hops)
            print(f"wrote {out} ({view.graph.number_of_nodes()} nodes in the workspace graph)", file=sys.stderr)
        elif args.graph_command == "stats":
            stats = view.stats(args.top)
            print(json.dumps(stats, indent=2) if args.json else format_stats(stats))
        else:
            around = view.draw(args.topic, args.hops, Path(args.out))
            print(
                f"wrote {args.out} ({around.number_of_nodes()} nodes, {around.number_of_edges()} edges)",
                file=sys.stderr,
            )
    except TopicNotFound as missing:
        print(f"flowbaby graph: no memory with topicId {missing}", file=sys.stderr)
        return 1
    except FlowbabyError as error:
        print(f"flowbaby graph: {error.code.value}: {error.message}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def format_stats(stats: dict[str, Any]) -> str:
    counts = (
        f"{stats['memories']} memories ({stats['memoriesInGraph']} in the graph), "
        f"{stats['entities']} entities, {stats['relations']} relations"
    )
    lines = [counts, "", "top entities by degree:"]
    for row in stats["topEntities"]:
        lines.append(
            f"  {row['name'][:40]:<40} {row['type']:<12} degree {row['degree']:>3}  "
            f"in {', '.join(row['topics'][:4])}{' …' if len(row['topics']) > 4 else ''}"
        )
    lines += ["", "largest components:"]
    for part in stats["components"]:
        lines.append(f"  {part['nodes']:>4} nodes: {part['memories']} memories, {part['entities']} entities")
    waiting = stats["waiting"]
    lines += ["", f"memories without a graph: {len(waiting)}"]
    for row in waiting:
        reason = f" ({row['errorCode']})" if row["errorCode"] else ""
        lines.append(f"  {row['graphState']:<8} {row['topicId']} v{row['version']}{reason}")
    return "\n".join(lines)
