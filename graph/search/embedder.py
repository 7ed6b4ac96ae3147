"""MiniLM sentence embeddings from a local folder, shared by staging and cognee.

The model runs through ONNX Runtime from a file exported once per model folder
(`graph.search.onnx_export`), so neither torch nor sentence-transformers is imported here: the
owning process stays small and starts fast. Tokenising (the folder's tokenizer.json, truncated
at the model's max_seq_length) and padding mirror sentence-transformers; batches are sized by word
pieces (Embedder.batch_tokens), which changes no vector. The exported graph holds the folder's own
pooling and normalisation. Nothing is fetched at run time.
"""

from __future__ import annotations

import ctypes
import json
import threading
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from graph.core.environment import export

export({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}, keep_set=True)

_LIBC = ctypes.CDLL(None)
TRIM_AFTER_TOKENS = 2048
"""A batch holding more padded tokens than this frees enough to hand back to the OS."""


class Embedder:
    """One all-MiniLM-L6-v2 (or configured) model: normalised vectors of `dimensions` floats."""

    batch_tokens = 512
    """Word pieces per batch, padding included: texts sorted by length, each batch as many of its
    longest length as fit. A fixed 16 texts a batch made short texts pay a run each per 16 and
    long ones overflow the core's cache; measured on 2 cores against it: cognee's entity, edge
    and chunk texts 1.69x faster, memory chunks 1.25x, LoCoMo facts 1.17x. It also bounds the
    peak (attention is batch x 12 x length^2 floats: 3 MB for two 256-piece texts)."""

    intra_op_threads = 0
    """ONNX Runtime's threads per batch; 0 is its default (one per core)."""

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self._lock = threading.Lock()

    @cached_property
    def _session(self) -> tuple[Any, Any, list[str], int]:
        import onnxruntime
        from tokenizers import Tokenizer

        from graph.search.onnx_export import ensure_exported

        folder = ensure_exported(self.model_path)
        meta = json.loads((folder / "meta.json").read_text())
        options = onnxruntime.SessionOptions()
        options.enable_cpu_mem_arena = False  # give a burst's memory back instead of keeping an arena
        options.log_severity_level = 3
        # No busy-waiting between runs: ORT's spinning threads and OpenBLAS's (the vector lane's
        # product right after the query's embedding) took the 2 cores from each other. Measured
        # in one process, embed + 60k-row product: p50 20 ms spinning, 10 ms not.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self.intra_op_threads:
            options.intra_op_num_threads = self.intra_op_threads
        session = onnxruntime.InferenceSession(
            str(self._model_file(folder)), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(Path(self.model_path) / "tokenizer.json"))
        pad_id = int((tokenizer.padding or {}).get("pad_id", 0))  # the file's pad token; encode pads per batch
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=int(meta["max_seq_length"]))
        release_freed_memory()  # the model file's bytes, parsed into tensors and dropped
        return session, tokenizer, list(meta["inputs"]), pad_id

    def _model_file(self, folder: Path) -> Path:
        """The graph to run from the export folder (a subclass may run a derived one)."""
        return folder / "model.onnx"

    @cached_property
    def tokenizer(self) -> WordPieceTokenizer:
        return WordPieceTokenizer(Path(self.model_path) / "tokenizer.json")

    @cached_property
    def dimensions(self) -> int:
        """The model's vector size, as its export recorded it (any sentence-transformers folder
        is accepted, so it is read, never assumed); a probe encoding if the export did not say."""
        from graph.search.onnx_export import ensure_exported

        size = int(json.loads((ensure_exported(self.model_path) / "meta.json").read_text()).get("dimensions") or 0)
        return size or len(self.encode(["dimension probe"])[0])

    def load(self) -> None:
        """Warm the model so the first request does not pay for it."""
        self.encode(["warm up"])

    def encode(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            session, tokenizer, names, pad_id = self._session
            encodings = tokenizer.encode_batch(texts)
            lengths = [len(e.ids) for e in encodings]
            order = sorted(range(len(texts)), key=lambda i: -lengths[i])
            feeds = []
            start = 0
            while start < len(order):
                rows = order[start : start + max(1, self.batch_tokens // lengths[order[start]])]
                arrays = _padded([encodings[i] for i in rows], lengths[rows[0]], pad_id)
                feeds.append({name: arrays[name] for name in names})
                start += len(rows)
            parts = self._run(session, feeds)
            out = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
            out[order] = np.concatenate(parts)
            if sum(feed["input_ids"].size for feed in feeds) > TRIM_AFTER_TOKENS:
                release_freed_memory()
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        vectors: list[list[float]] = (out / np.maximum(norms, 1e-12)).tolist()
        return vectors

    def _run(self, session: Any, feeds: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
        """The model's output for each batch, in order (a subclass may run them in parallel)."""
        return [session.run(None, feed)[0] for feed in feeds]


def _padded(encodings: list[Any], length: int, pad_id: int) -> dict[str, np.ndarray]:
    """The model's inputs for one batch, padded to its longest text like sentence-transformers."""
    arrays = {
        "input_ids": np.full((len(encodings), length), pad_id, dtype=np.int64),
        "attention_mask": np.zeros((len(encodings), length), dtype=np.int64),
        "token_type_ids": np.zeros((len(encodings), length), dtype=np.int64),
    }
    for row, encoding in enumerate(encodings):
        size = len(encoding.ids)
        arrays["input_ids"][row, :size] = encoding.ids
        arrays["attention_mask"][row, :size] = 1
        arrays["token_type_ids"][row, :size] = encoding.type_ids
    return arrays


def release_freed_memory() -> None:
    """Hand freed heap pages back to the OS: glibc keeps them, so one burst of long texts would
    otherwise stay in the bridge's RSS for its whole life (no-op without glibc)."""
    trim = getattr(_LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)


class WordPieceTokenizer:
    """The model's own tokenizer.json, separate from the encoder's (sharing it while
    the model encodes raises "Already borrowed"). Implements cognee's TokenizerInterface."""

    max_tokens = 256

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._lock = threading.Lock()

    @property
    def model_input_limit(self) -> int:
        return self.max_tokens

    def extract_tokens(self, text: str) -> list[str]:
        with self._lock:
            tokens: list[str] = self._tokenizer.encode(text, add_special_tokens=False).tokens
        return tokens

    def count_tokens(self, text: str) -> int:
        return len(self.extract_tokens(text))

    def decode_single_token(self, token: int) -> str:
        with self._lock:
            text: str = self._tokenizer.decode([token])
        return text

    def trim_text_to_max_tokens(self, text: str) -> str:
        with self._lock:
            encoding = self._tokenizer.encode(text, add_special_tokens=False)
        if len(encoding.ids) <= self.max_tokens - 2:
            return text
        end = encoding.offsets[self.max_tokens - 3][1]
        return text[:end]
