"""The catalog's text index between starts: `.flowbaby/catalog.npz`, the in-memory BM25 postings and
the name links of every catalogued memory, so the owner's warm-up reads arrays instead of tokenising
every memory again (100k memories: ~7 s of regular expressions on a 2-core machine).

Never stale: the file lists the memories it covers, in catalog order, with a digest of their texts,
and is used only for a catalog whose memories begin with exactly those (ids and the texts' digest);
memories added since are indexed as usual on top. Anything else (another list, a damaged, truncated
or hostile file) and the index is built from the memories, as without a snapshot. It is a NumPy
archive read with `allow_pickle=False` (loading never runs code), every array checked (types,
shapes, bounds, and each memory's length against its postings) before use. It is written to a
temporary file and renamed into place, so a crash or a second process never leaves a half file
that is read. Forgetting deletes it (graph.engine.lifecycle), so it never keeps a forgotten memory's words.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import zipfile
from pathlib import Path

import numpy as np

from graph.core.files import atomic_writer, remove_leftovers
from graph.core.lexical import LexicalIndex, LexicalState
from graph.core.memories import Memory
from graph.search.links import NameLinks

log = logging.getLogger(__name__)

FORMAT = 1
"""Bumped when the arrays or what they mean change: a snapshot of another format is rebuilt."""
_SEPARATOR = "\n"
"""Joins ids, terms and names into one UTF-8 array: none holds a line break (tokens and names are
runs of letters, digits and a few marks; a memory id with one is not snapshotted)."""
_EXPECTED = {
    "format": (np.int64, 1),
    "ids": (np.uint8, 1),
    "digest": (np.uint8, 1),
    "lengths": (np.float64, 1),
    "terms": (np.uint8, 1),
    "term_offsets": (np.int64, 1),
    "positions": (np.int64, 1),
    "tfs": (np.float64, 1),
    "names": (np.uint8, 1),
    "name_offsets": (np.int64, 1),
    "name_ids": (np.int64, 1),
}


def texts_digest(memories: list[Memory]) -> np.ndarray:
    """One digest of these memories' ids and texts, in order (each text's length frames it)."""
    digest = hashlib.blake2b(digest_size=32)
    for memory in memories:  # one text at a time: no copy of them all (100k memories: ~30 MB)
        text = memory.text().encode("utf-8", "surrogatepass")
        digest.update(b"%d\0%d\0" % (len(memory.memory_id), len(text)))
        digest.update(memory.memory_id.encode("utf-8", "surrogatepass"))
        digest.update(text)
    return np.frombuffer(digest.digest(), dtype=np.uint8)


def _joined(items: list[str]) -> np.ndarray:
    return np.frombuffer(_SEPARATOR.join(items).encode("utf-8", "surrogatepass"), dtype=np.uint8)


def _split(blob: np.ndarray) -> list[str]:
    return blob.tobytes().decode("utf-8", "surrogatepass").split(_SEPARATOR) if len(blob) else []


def save(path: Path, lexical: LexicalIndex, links: NameLinks, memories: dict[str, Memory]) -> bool:
    """Write the snapshot of these indexes of these memories (temporary file, then renamed into place).
    False, and nothing written, when it cannot be (a memory id with a line break, a full disk)."""
    for _ in range(3):  # a memory catalogued between the two exports: once more
        state = lexical.export()
        names = links.export()
        if [memory_id for memory_id, _ in names] == state.ids:
            break
    else:
        return False
    if any(_SEPARATOR in i for i in state.ids):
        return False
    name_list = list(dict.fromkeys(key for _, keys in names for key in keys))
    if any(_SEPARATOR in t for t in state.terms) or any(_SEPARATOR in k for k in name_list):
        return False
    number = {key: i for i, key in enumerate(name_list)}
    name_offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(keys) for _, keys in names], out=name_offsets[1:])
    arrays = {
        "format": np.array([FORMAT], dtype=np.int64),
        "ids": _joined(state.ids),
        "digest": texts_digest([memories[i] for i in state.ids]),
        "lengths": state.lengths,
        "terms": _joined(state.terms),
        "term_offsets": state.term_offsets,
        "positions": state.positions,
        "tfs": state.tfs,
        "names": _joined(name_list),
        "name_offsets": name_offsets,
        "name_ids": np.array([number[key] for _, keys in names for key in keys], dtype=np.int64),
    }
    remove_leftovers(path)  # a write cut short by a crash
    try:
        with atomic_writer(path, binary=True, durable=True) as handle:
            np.savez(handle, **arrays)  # type: ignore[arg-type]
    except OSError as error:
        log.warning("catalog snapshot not written: %s", error)
        return False
    return True


def delete(path: Path) -> None:
    """The snapshot and any temporary one a process left when it died mid-write (they hold words too)."""
    for stale in [path, *path.parent.glob(f".{path.name}.*.tmp")]:
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()


def load(path: Path, memories: list[Memory]) -> tuple[LexicalState, list[list[str]]] | None:
    """The snapshot's indexes if it covers exactly the first memories of this list (same ids, same
    text digests), else None (no file, another list, or a file that fails any check)."""
    try:
        with open(path, "rb", opener=_no_follow) as handle, np.load(handle, allow_pickle=False) as archive:
            if set(archive.files) != set(_EXPECTED):
                raise ValueError(f"arrays {sorted(archive.files)}")
            arrays = {name: archive[name] for name in _EXPECTED}
        return _checked(arrays, memories)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, IndexError, UnicodeDecodeError, zipfile.BadZipFile, EOFError) as error:
        log.warning("catalog snapshot unusable (%s): rebuilding the catalog's index", error)
        return None


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def _checked(arrays: dict[str, np.ndarray], memories: list[Memory]) -> tuple[LexicalState, list[list[str]]] | None:
    for name, (dtype, ndim) in _EXPECTED.items():
        if arrays[name].dtype != dtype or arrays[name].ndim != ndim:
            raise ValueError(f"{name}: {arrays[name].dtype}, {arrays[name].ndim} dimensions")
    if arrays["format"].tolist() != [FORMAT]:
        raise ValueError(f"format {arrays['format'].tolist()}")
    ids = _split(arrays["ids"])
    n = len(ids)
    if n > len(memories) or [m.memory_id for m in memories[:n]] != ids:
        return None  # another list of memories (one forgotten, or another order): rebuilt
    if not np.array_equal(arrays["digest"], texts_digest(memories[:n])):
        return None  # a memory's text differs
    lengths, offsets = arrays["lengths"], arrays["term_offsets"]
    positions, tfs = arrays["positions"], arrays["tfs"]
    terms = _split(arrays["terms"])
    if lengths.shape != (n,) or len(offsets) != len(terms) + 1 or len(set(terms)) != len(terms):
        raise ValueError("term or length counts")
    if offsets[0] != 0 or offsets[-1] != len(positions) or len(tfs) != len(positions) or np.any(np.diff(offsets) < 1):
        raise ValueError("term offsets")
    if len(positions) and (positions.min() < 0 or positions.max() >= n):
        raise ValueError("positions out of range")
    if not np.all(np.isfinite(tfs)) or np.any(tfs < 1) or np.any(tfs != np.floor(tfs)):
        raise ValueError("term frequencies")
    steps = np.diff(positions)
    steps[offsets[1:-1] - 1] = 1  # a term's postings rise; the next term starts anew
    if np.any(steps < 1):
        raise ValueError("postings out of order")
    if not np.array_equal(np.bincount(positions, weights=tfs, minlength=n), lengths):
        raise ValueError("lengths disagree with the postings")
    names, name_offsets, name_ids = _split(arrays["names"]), arrays["name_offsets"], arrays["name_ids"]
    if len(name_offsets) != n + 1 or name_offsets[0] != 0 or name_offsets[-1] != len(name_ids):
        raise ValueError("name offsets")
    if np.any(np.diff(name_offsets) < 0) or (len(name_ids) and (name_ids.min() < 0 or name_ids.max() >= len(names))):
        raise ValueError("name numbers")
    bounds, numbers = name_offsets.tolist(), name_ids.tolist()
    held = [[names[k] for k in numbers[bounds[i] : bounds[i + 1]]] for i in range(n)]
    return LexicalState(ids, lengths, terms, offsets, positions, tfs), held
