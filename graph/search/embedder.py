"""MiniLM sentence embeddings from a local folder, shared by staging and cognee.

The model is loaded lazily (sentence-transformers costs seconds to import) and
only ever from a local path with the hub switched off, so nothing is fetched at
run time. Encoding runs under a lock: one model instance per process, and torch
already uses both cores for a batch.
"""

from __future__ import annotations

import os
import threading
from functools import cached_property
from pathlib import Path
from typing import Any

from graph.core.sentences import sentences

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MAX_CHUNK_CHARS = 600
"""MiniLM reads 256 word pieces at most; ~600 characters of English stays under that."""


def split_sentences(text: str) -> list[str]:
    """Sentences of a field, with long ones cut at word boundaries so none is truncated."""
    pieces: list[str] = []
    for paragraph in text.splitlines():
        for sentence in sentences(paragraph.strip()):
            sentence = sentence.strip()
            while len(sentence) > MAX_CHUNK_CHARS:
                cut = sentence.rfind(" ", 0, MAX_CHUNK_CHARS)
                cut = cut if cut > MAX_CHUNK_CHARS // 2 else MAX_CHUNK_CHARS
                pieces.append(sentence[:cut].strip())
                sentence = sentence[cut:].strip()
            if sentence:
                pieces.append(sentence)
    return pieces


class Embedder:
    """One all-MiniLM-L6-v2 (or configured) model: 384-d, normalised vectors."""

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self._lock = threading.Lock()

    @cached_property
    def _model(self) -> Any:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(self.model_path, device="cpu", local_files_only=True)

    @cached_property
    def tokenizer(self) -> WordPieceTokenizer:
        return WordPieceTokenizer(Path(self.model_path) / "tokenizer.json")

    def load(self) -> None:
        """Warm the model so the first request does not pay for it."""
        self.encode(["warm up"])

    def encode(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            vectors = self._model.encode(
                texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return vectors.tolist()


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
            return self._tokenizer.encode(text, add_special_tokens=False).tokens

    def count_tokens(self, text: str) -> int:
        return len(self.extract_tokens(text))

    def decode_single_token(self, token: int) -> str:
        with self._lock:
            return self._tokenizer.decode([token])

    def trim_text_to_max_tokens(self, text: str) -> str:
        with self._lock:
            encoding = self._tokenizer.encode(text, add_special_tokens=False)
        if len(encoding.ids) <= self.max_tokens - 2:
            return text
        end = encoding.offsets[self.max_tokens - 3][1]
        return text[:end]
