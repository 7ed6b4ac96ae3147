"""The ONNX file the embedder runs, exported once per model folder into a user cache.

The model folders (the bundled MiniLM, or `FLOWBABY_EMBEDDING_MODEL`) ship safetensors, not ONNX.
We trace the whole sentence-transformers pipeline (transformer, the folder's own pooling and
normalisation) with torch's TorchScript exporter, so the graph is the library's code, not a
re-implementation. Torch only ever runs in a child process (`python -m graph.search.onnx_export`),
at `make setup` or lazily at first use, so the owning process never loads it. The cache key is the
folder's content hash, so an edited or different folder gets its own file; nothing is downloaded.
A folder that carries its own export in `onnx/` (the wheel's bundled MiniLM, built by `make dist`)
is used as it is: an installed flowbaby needs neither torch nor this exporter (the `export` extra).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
from pathlib import Path
from typing import Any

from graph.core.child_python import run_module
from graph.core.environment import Environment
from graph.core.environment import export as export_environment
from graph.core.files import write_atomic

EXPORT_VERSION = "2"
"""Bump when the exported files change (inputs, outputs, opset, layout)."""

OPSET = 17
WEIGHTS = "model.onnx.data"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
SHIPPED = "onnx"
"""The sub-folder of a model folder holding its own export (meta.json, model.onnx and its weights)."""


def cache_root() -> Path:
    base = str(Environment.read().cache_home)
    return Path(base) / "flowbaby" / "onnx"


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)


def folder_key(model_path: str) -> str:
    """Hash of every file's relative path and bytes (the weights dominate: 0.1-0.3 s for MiniLM)."""
    root = Path(model_path)
    digest = hashlib.blake2b(EXPORT_VERSION.encode(), digest_size=16)
    for path in _files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def cached_dir(model_path: str) -> Path:
    """The folder's cache entry. The content hash is remembered under the files' paths, sizes and
    mtimes, so a start that finds them unchanged does not read the weights again."""
    root = Path(model_path).resolve()
    stat = hashlib.blake2b(f"{EXPORT_VERSION}\0{root}".encode(), digest_size=16)
    for path in _files(root):
        info = path.stat()
        stat.update(f"{path.relative_to(root)}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    memo = cache_root() / "keys" / stat.hexdigest()
    if memo.is_file():
        return cache_root() / memo.read_text().strip()
    key = folder_key(model_path)
    memo.parent.mkdir(parents=True, exist_ok=True)
    # A file of this call's own (threads of one process look the folder up at once: an owner's
    # warm-up and its first embedding), renamed over the memo: readers never see half a key.
    write_atomic(memo, key)
    return cache_root() / key


def shipped_export(model_path: str) -> Path | None:
    """The folder's own export (`onnx/`) when it is of this EXPORT_VERSION, else None."""
    folder = Path(model_path) / SHIPPED
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    return folder if meta.get("export_version") == EXPORT_VERSION else None


def export_key(folder: Path) -> str:
    """The export's name for the vectors it makes: its cache key (a shipped export records the key of
    the folder it was exported from, so both give the same name)."""
    key = json.loads((folder / "meta.json").read_text()).get("key")
    return str(key) if key else folder.name


def ensure_exported(model_path: str) -> Path:
    """The folder holding model.onnx and meta.json: the model folder's own export, else its cache
    folder, exporting in a child process if missing (torch: the `export` extra).
    A folder without config.json fails here: the child would import torch (~10 CPU-s) to find that."""
    shipped = shipped_export(model_path)
    if shipped is not None:
        return shipped
    if not (Path(model_path) / "config.json").is_file():
        raise RuntimeError(f"ONNX export of {model_path} failed: no config.json: not a transformers model folder")
    target = cached_dir(model_path)
    if (target / "meta.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a worker and an owner starting together export once
        if not (target / "meta.json").is_file():
            run_module(f"ONNX export of {model_path}", "graph.search.onnx_export", model_path, "--out", str(target))
    return target


def export(model_path: str, target: Path) -> None:
    """Trace the sentence-transformers pipeline to target/model.onnx (+ its weights file);
    meta.json, written last, marks the export complete."""
    try:
        import onnx
        import torch
        from sentence_transformers import SentenceTransformer
    except ModuleNotFoundError as missing:  # an installed flowbaby has no exporter: say which extra holds it
        raise SystemExit(
            f"exporting {model_path} to ONNX needs {missing.name}: install flowbaby's `export` extra "
            "(make setup does, with torch's CPU build)"
        ) from None

    model = SentenceTransformer(model_path, device="cpu", local_files_only=True).eval()
    sample = model.preprocess(["export sample", "a second, longer sample sentence"])
    names = [name for name in INPUT_NAMES if name in sample]

    class Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            embedding: torch.Tensor = self.model(dict(zip(names, inputs, strict=True)))["sentence_embedding"]
            return embedding

    target.mkdir(parents=True, exist_ok=True)
    traced = target / "traced.onnx"
    with torch.inference_mode(False), torch.no_grad():
        torch.onnx.export(
            Pipeline(),
            tuple(sample[name] for name in names),
            str(traced),
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes={**{name: {0: "batch", 1: "tokens"} for name in names}, "sentence_embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )
    # Weights in a side file: ONNX Runtime maps it instead of copying it onto the heap, so the
    # vocabulary rows a process never reads stay out of its RSS (about 45 MB less for MiniLM).
    onnx.save_model(onnx.load(str(traced)), str(target / "model.onnx"), save_as_external_data=True, location=WEIGHTS)
    traced.unlink()
    meta: dict[str, Any] = {
        "source": str(Path(model_path).resolve()),
        "inputs": names,
        "max_seq_length": int(model.max_seq_length),
        "dimensions": int(model.get_sentence_embedding_dimension() or 0),
        "export_version": EXPORT_VERSION,
    }
    write_atomic(target / "meta.json", json.dumps(meta, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m graph.search.onnx_export", description=__doc__)
    parser.add_argument(
        "model",
        nargs="?",
        help="sentence-transformers folder (default: FLOWBABY_EMBEDDING_MODEL, else the bundled MiniLM)",
    )
    parser.add_argument("--out", help="target folder (default: the cache folder for the model's content)")
    args = parser.parse_args()
    export_environment({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}, keep_set=True)
    if args.model is None:
        from graph.core.settings import default_model_path

        args.model = Environment.read().get("FLOWBABY_EMBEDDING_MODEL") or default_model_path()
    if args.out:
        export(args.model, Path(args.out))
        return
    print(ensure_exported(args.model))


if __name__ == "__main__":
    main()
