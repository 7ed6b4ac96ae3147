"""The owner's compact copy of the chunk table (graph.backends.embedded.compact_vectors): a start reads it instead
of the table; a missing, torn, short or stale folder is rebuilt from the table, never trusted; past
EXACT_ROWS the sketch scan plus exact re-rank finds what the exact search finds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from graph.backends.embedded import compact_vectors, vectors
from graph.backends.embedded.chunk_table import LanceChunkTable, committed_version
from graph.backends.embedded.compact_vectors import compact_path
from graph.backends.embedded.vectors import VectorIndex, memory_chunks
from tests.support.fakes import HashEmbedder, memory


class TopicEmbedder:
    """Vectors like a sentence model's: a few shared directions (topics) plus a little noise per text,
    so that most of their variance lies in a few dimensions, as MiniLM's does."""

    dimensions = 384

    def __init__(self) -> None:
        self._topics = np.random.default_rng(7).standard_normal((24, self.dimensions))

    def encode(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            rng = np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little"))
            vector = rng.standard_normal(24) @ self._topics + 0.5 * rng.standard_normal(self.dimensions)
            out.append((vector / np.linalg.norm(vector)).tolist())
        return out


def _memories(count: int, start: int = 0) -> list:
    return [memory(f"m{i}", context=f"note {i} about subsystem {i % 97}, owner {i % 13}") for i in range(start, count)]


def _answers(index: VectorIndex, queries: list[list[float]]) -> list[list[tuple[str, str, float]]]:
    return [[(c.memory_id, c.text, round(s, 5)) for c, s in index.nearest_chunks(q, 20)] for q in queries]


def _built(path: Path, count: int) -> list[list[tuple[str, str, float]]]:
    """An index at `path` holding `count` memories, closed; what QUERIES found in it."""
    first = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    first.add_memories(_memories(count))
    answers = _answers(first, QUERIES)
    first.close()
    return answers


QUERIES = HashEmbedder().encode([f"query {i}" for i in range(10)])


def test_a_reopen_reads_the_compact_folder_not_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "vectors.lance"
    before = _built(path, 50)
    monkeypatch.setattr(LanceChunkTable, "rows", lambda self: pytest.fail("read the whole table"))
    again = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    assert not again.rebuilt_compact and again.count() == 100
    assert _answers(again, QUERIES) == before  # same chunks, texts read from the folder, same scores
    again.close()


def _torn_header(folder: Path) -> None:
    header = folder / "header.json"
    header.write_bytes(header.read_bytes()[:25])


def _short_vectors(folder: Path) -> None:
    data = folder / "vectors.f32"
    data.write_bytes(data.read_bytes()[:-100])


def _short_texts(folder: Path) -> None:
    data = folder / "texts.bin"
    data.write_bytes(data.read_bytes()[:-3])


def _no_folder(folder: Path) -> None:
    for file in folder.iterdir():
        file.unlink()
    folder.rmdir()


def _rows_past_the_texts(folder: Path) -> None:
    """A header that commits fewer text bytes than the rows point to (written by something else)."""
    header = json.loads((folder / "header.json").read_text())
    header["textBytes"] -= 5
    (folder / "header.json").write_text(json.dumps(header))


def _garbled_memories(folder: Path) -> None:
    data = folder / "memories.jsonl"
    data.write_bytes(b"\xff" + data.read_bytes()[1:])


@pytest.mark.parametrize(
    "damage", [_torn_header, _short_vectors, _short_texts, _no_folder, _rows_past_the_texts, _garbled_memories]
)
def test_a_damaged_folder_is_rebuilt_from_the_table(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "vectors.lance"
    before = _built(path, 30)
    damage(compact_path(path))
    again = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    assert again.rebuilt_compact and again.count() == 60
    assert _answers(again, QUERIES) == before
    again.close()
    third = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    assert not third.rebuilt_compact and _answers(third, QUERIES) == before  # the rebuilt folder is trusted
    third.close()


def test_an_append_cut_short_is_cut_off(tmp_path: Path) -> None:
    """Bytes past what the header commits (a crash mid-append) are dropped; the rest is trusted."""
    path = tmp_path / "vectors.lance"
    before = _built(path, 20)
    folder = compact_path(path)
    for name in ("vectors.f32", "rows.bin", "texts.bin", "memories.jsonl"):
        with open(folder / name, "ab") as out:
            out.write(b"\x7f" * 37)
    again = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    assert not again.rebuilt_compact and again.count() == 40 and _answers(again, QUERIES) == before
    again.add_memories(_memories(21, 20))  # appends after the cut land where the header says
    again.close()
    third = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    assert not third.rebuilt_compact and third.count() == 42
    assert third.nearest_chunks(HashEmbedder().encode([_memories(21, 20)[0].context])[0], 1)[0][0].memory_id == "m20"
    third.close()


def test_a_table_changed_behind_the_folder_is_not_trusted(tmp_path: Path) -> None:
    """Rows the table gained without the folder (a crash between the two writes) are found after a start."""
    path = tmp_path / "vectors.lance"
    _built(path, 10)
    extra = memory("late", context="written to the table only")
    chunks = memory_chunks(extra)
    LanceChunkTable(path, 384).add(chunks, np.asarray(HashEmbedder().encode([c.text for c in chunks]), np.float32))
    again = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    assert again.rebuilt_compact and "late" in again.indexed_memory_ids()
    again.close()


def test_forget_leaves_the_folder_without_the_memory(tmp_path: Path) -> None:
    path = tmp_path / "vectors.lance"
    _built(path, 10)
    index = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    index.add_memories(_memories(12, 10))
    index.forget(["m3", "m11"])
    assert index.indexed_memory_ids() == {f"m{i}" for i in range(12)} - {"m3", "m11"} and index.count() == 20
    index.close()
    again = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    assert not again.rebuilt_compact and again.count() == 20
    texts = (compact_path(path) / "texts.bin").read_bytes()
    assert b"note 3 about" not in texts and b"note 11 about" not in texts and b"note 4 about" in texts
    again.close()


@pytest.fixture
def compact_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compact search from 1,000 rows on (150,000 in the product), shortlists as in the product."""
    monkeypatch.setattr(compact_vectors, "EXACT_ROWS", 1_000)
    monkeypatch.setattr(vectors, "EXACT_ROWS", 1_000)
    monkeypatch.setattr(vectors, "SHORTLIST_MIN", 400)


def test_the_compact_search_finds_what_the_exact_search_finds(tmp_path: Path, compact_search: None) -> None:
    """Recall@100 against the exact search on the same rows >= 0.99, with the same similarities; rows
    added after the start (kept in memory) and rows read from the folder alike."""
    embedder = TopicEmbedder()
    exact = VectorIndex(tmp_path / "exact.lance", embedder)  # type: ignore[arg-type]
    exact.add_memories(_memories(450))  # 900 rows: exact search
    exact.close()
    compact = VectorIndex(tmp_path / "compact.lance", embedder)  # type: ignore[arg-type]
    compact.add_memories(_memories(1_400))
    compact.close()
    compact = VectorIndex(tmp_path / "compact.lance", embedder)  # type: ignore[arg-type]
    assert compact._view.exact is None and compact._view.sketch is not None  # 2,800 rows: compact
    compact.add_memories(_memories(1_600, 1_400))  # 400 more rows, in memory only until the next start
    reference = np.asarray(
        [embedder.encode([c.text])[0] for m in _memories(1_600) for c in memory_chunks(m)], dtype=np.float32
    )
    queries = embedder.encode([f"which subsystem does owner {i} run" for i in range(40)])
    found = 0
    for query in queries:
        similarities = reference @ np.asarray(query, dtype=np.float32)
        kth = np.sort(similarities)[-100]
        hits = compact.nearest_chunks(query, 100)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        found += sum(s >= kth - 1e-6 for _, s in hits)
        best = int(np.argmax(similarities))
        assert hits[0][1] == pytest.approx(float(similarities[best]), abs=1e-5)
    assert found / (100 * len(queries)) >= 0.99
    [(chunk, _)] = compact.nearest_chunks(embedder.encode(["note 1500 about subsystem 45, owner 5"])[0], 1)
    assert chunk.memory_id == "m1500" and chunk.text == "note 1500 about subsystem 45, owner 5"
    compact.close()


def test_the_folder_gains_its_sketch_when_it_grows_past_exact_rows(tmp_path: Path, compact_search: None) -> None:
    embedder = TopicEmbedder()
    path = tmp_path / "vectors.lance"
    index = VectorIndex(path, embedder)  # type: ignore[arg-type]
    index.add_memories(_memories(400))
    index.close()
    assert json.loads((compact_path(path) / "header.json").read_text())["sketch"] == 0
    index = VectorIndex(path, embedder)  # type: ignore[arg-type]
    index.add_memories(_memories(700, 400))  # 1,400 rows now
    index.close()
    index = VectorIndex(path, embedder)  # type: ignore[arg-type]
    header = json.loads((compact_path(path) / "header.json").read_text())
    assert not index.rebuilt_compact and header["sketch"] == compact_vectors.SKETCH_DIMENSIONS
    assert index._view.exact is None
    query = embedder.encode(["note 650 about subsystem 68, owner 0"])[0]
    assert index.nearest_chunks(query, 1)[0][0].memory_id == "m650"
    index.add_memories(_memories(710, 700))
    index.close()
    index = VectorIndex(path, embedder)  # type: ignore[arg-type]  # the appends wrote their sketches
    assert not index.rebuilt_compact and index.count() == 1_420
    assert (
        index.nearest_chunks(embedder.encode(["note 705 about subsystem 26, owner 3"])[0], 1)[0][0].memory_id == "m705"
    )
    index.close()


def test_the_manifest_names_give_the_tables_version(tmp_path: Path) -> None:
    """committed_version reads what LanceDB's own `version` says, through appends, a compaction and a
    deletion that removes the old versions' files."""
    path = tmp_path / "vectors.lance"
    assert committed_version(path) is None  # no table yet: the table itself is asked
    table = LanceChunkTable(path, 384)
    embedder = HashEmbedder()
    for batch in (_memories(3), _memories(6, 3)):
        chunks = [c for m in batch for c in memory_chunks(m)]
        table.add(chunks, np.asarray(embedder.encode([c.text for c in chunks]), np.float32))
        assert committed_version(path) == table.state()[0]
    table.optimize()
    assert committed_version(path) == table.state()[0]
    table.delete(["m1"])
    assert committed_version(path) == table.state()[0]


def test_a_start_on_a_current_folder_never_opens_the_table(tmp_path: Path) -> None:
    path = tmp_path / "vectors.lance"
    before = _built(path, 20)
    untouched = UnopenedTable()
    again = VectorIndex(path, HashEmbedder(), untouched)  # type: ignore[arg-type]
    assert not again.rebuilt_compact and _answers(again, QUERIES) == before and untouched.calls == []
    again.close()


def test_a_start_without_a_table_opens_none_and_the_first_append_makes_it(tmp_path: Path) -> None:
    path = tmp_path / "vectors.lance"
    untouched = UnopenedTable()
    empty = VectorIndex(path, HashEmbedder(), untouched)  # type: ignore[arg-type]
    assert empty.count() == 0 and untouched.calls == []
    empty.close()
    again = VectorIndex(path, HashEmbedder(), UnopenedTable())  # type: ignore[arg-type]
    again.close()  # the empty folder is trusted while there is no table
    first = VectorIndex(path, HashEmbedder(), LazyTable(path))  # type: ignore[arg-type]
    first.add_memories(_memories(5))
    first.close()
    third = VectorIndex(path, HashEmbedder(), UnopenedTable())  # type: ignore[arg-type]
    assert third.count() == 10 and not third.rebuilt_compact
    third.close()


def test_after_a_refused_write_the_next_start_reads_the_table(tmp_path: Path) -> None:
    """A table that refused a write may be damaged: the folder is no longer trusted by version alone,
    so the next start reads the table (and finds the memory missing, to be embedded again)."""
    path = tmp_path / "vectors.lance"
    _built(path, 10)
    refusing = VectorIndex(path, HashEmbedder(), RefusingTable(path))  # type: ignore[arg-type]
    refusing.add_memories([memory("late", context="refused by the table")])
    refusing.flush()
    assert refusing.write_failures == 1
    refusing.close()
    again = VectorIndex(path, HashEmbedder())  # type: ignore[arg-type]
    assert again.rebuilt_compact and again.count() == 20 and "late" not in again.indexed_memory_ids()
    again.close()


class UnopenedTable:
    """A table that records any call: a start that trusts the folder makes none."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        self.calls.append(name)
        return lambda *args: pytest.fail(f"the table was asked for {name}")

    def close(self) -> None:
        """Closing an unopened table costs nothing."""


class RefusingTable(LanceChunkTable):
    """The real table, refusing appends (a full disk, a damaged fragment)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, 384)

    def add(self, chunks, vectors) -> None:  # type: ignore[no-untyped-def]
        raise OSError("No space left on device")


class LazyTable:
    """The real table, made at its first call (as the LanceDB child is started at the first write)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._table: LanceChunkTable | None = None

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        if self._table is None:
            self._table = LanceChunkTable(self._path, 384)
        return getattr(self._table, name)

    def close(self) -> None:
        """Nothing held between calls."""


def test_a_short_sketch_file_rebuilds_the_compact_folder_from_the_table(tmp_path: Path, compact_search: None) -> None:
    """The sketch is read straight into its array; a file shorter than its header says is a damaged
    derived file: the folder is rebuilt from the table, whose rows all stay searchable."""
    embedder = TopicEmbedder()
    path = tmp_path / "vectors.lance"
    index = VectorIndex(path, embedder)  # type: ignore[arg-type]
    index.add_memories(_memories(700))  # 1,400 rows: the next start adds the sketch
    index.close()
    VectorIndex(path, embedder).close()  # type: ignore[arg-type]
    sketch = compact_path(path) / "sketch.f32"
    assert sketch.stat().st_size == 1_400 * compact_vectors.SKETCH_DIMENSIONS * 4
    with sketch.open("r+b") as file:
        file.truncate(sketch.stat().st_size // 2)
    index = VectorIndex(path, embedder)  # type: ignore[arg-type]
    assert index.rebuilt_compact and index.count() == 1_400 and path.exists()
    assert (
        index.nearest_chunks(embedder.encode(["note 650 about subsystem 68, owner 0"])[0], 1)[0][0].memory_id == "m650"
    )
    index.close()
