"""The catalog snapshot (graph.search.snapshot): a catalog that starts from it ranks as one built from
the memories' text, and a snapshot that is stale, damaged or hostile is ignored, never trusted."""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from graph.core.lexical import LexicalIndex
from graph.core.memories import Memory
from graph.search import snapshot
from graph.search.catalog import Catalog
from tests.support.fakes import memory

QUERIES = ["redis cache eviction", "PAW-1432 rollout", "pricing v1 table", "pp-scans-prod bucket", "vite build"]


def memories(count: int) -> list[Memory]:
    words = ["redis", "cache", "eviction", "vite", "build", "rollout", "bucket", "pricing", "table", "queue"]
    out = []
    for n in range(count):
        picked = " ".join(words[(n * k) % len(words)] for k in (1, 3, 7))
        out.append(
            memory(
                f"m{n}",
                topic=f"{picked} note {n}",
                context=f"We changed the {picked} after PAW-{1400 + n % 40} on pp-scans-prod.",
                decisions=[f"Keep legacy_pricing_v{n % 3} for {picked}", "Watch pp-*-prod"],
                created=f"2025-03-{1 + n % 28:02d}T10:00:00Z",
            )
        )
    return out


def test_a_memorys_text_is_its_sections_in_reading_order() -> None:
    """Memory.text (what the index, the name links and the snapshot's digest read) spells sections() out
    for speed: a field added to one and not the other would index a memory differently than it reads."""
    full = memory(
        "m1",
        topic="Queue choice",
        context="Billing events",
        decisions=["Use Kafka", "Keep SQS for mail"],
        rationale=["Ordering per account"],
        open_questions=["Retention?"],
        next_steps=["Write the ADR"],
        references=["docs/adr/0007.md"],
    )
    assert full.text() == " ".join(item for _, items in full.sections() for item in items)
    assert full.text().split(" ")[:2] == ["Queue", "choice"] and full.text().endswith("docs/adr/0007.md")


def same_rankings(built: Catalog, restored: Catalog) -> None:
    assert len(built.lexical) == len(restored.lexical)  # type: ignore[arg-type]
    for query in QUERIES:
        assert restored.lexical.search(query) == built.lexical.search(query)
        assert restored.lexical.search(query, 5) == built.lexical.search(query, 5)
        assert restored.lexical.known_share(query) == built.lexical.known_share(query)
    for memory_id in built.by_id:
        assert restored.links.linked(memory_id) == built.links.linked(memory_id)
    assert restored.created_us == built.created_us
    assert {k: m.status for k, m in restored.by_id.items()} == {k: m.status for k, m in built.by_id.items()}


def test_a_catalog_from_its_snapshot_ranks_as_one_built_from_the_text(tmp_path: Path) -> None:
    path = tmp_path / "catalog.npz"
    built = Catalog(memories(60), LexicalIndex(), path)
    assert built.from_snapshot == 0 and not path.exists()
    assert snapshot.save(path, built.lexical, built.links, built.by_id)  # type: ignore[arg-type]
    assert [p.name for p in tmp_path.iterdir()] == ["catalog.npz"]  # no temporary file left
    restored = Catalog(memories(60), LexicalIndex(), path)
    assert restored.from_snapshot == 60
    same_rankings(built, restored)
    assert any(built.links.linked(m) for m in built.by_id)  # the links compared were not all empty


def test_memories_added_after_the_snapshot_are_indexed_on_top(tmp_path: Path) -> None:
    path = tmp_path / "catalog.npz"
    first = Catalog(memories(40), LexicalIndex())
    assert snapshot.save(path, first.lexical, first.links, first.by_id)  # type: ignore[arg-type]
    restored = Catalog(memories(60), LexicalIndex(), path)
    assert restored.from_snapshot == 40
    same_rankings(Catalog(memories(60), LexicalIndex()), restored)


@pytest.mark.parametrize("change", ["text", "forgotten", "order"])
def test_a_snapshot_of_other_memories_is_not_used(tmp_path: Path, change: str) -> None:
    path = tmp_path / "catalog.npz"
    first = Catalog(memories(30), LexicalIndex())
    assert snapshot.save(path, first.lexical, first.links, first.by_id)  # type: ignore[arg-type]
    now = memories(30)
    if change == "text":  # same id, other words (a version forgotten and staged again)
        now[3].decisions = ["Use memcached instead"]
    elif change == "forgotten":
        del now[10]
    else:
        now[0], now[1] = now[1], now[0]
    restored = Catalog(now, LexicalIndex(), path)
    assert restored.from_snapshot == 0
    same_rankings(Catalog(now, LexicalIndex()), restored)


class _Marker:
    """Unpickling this would create a file: loading a snapshot must never run code."""

    def __reduce__(self) -> tuple[object, tuple[str, int]]:
        return (os.open, (str(Path(os.environ["SNAPSHOT_MARKER"])), os.O_CREAT | os.O_WRONLY))


def _archive(path: Path, arrays: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    path.write_bytes(buffer.getvalue())


def _valid_arrays(tmp_path: Path) -> dict[str, np.ndarray]:
    source = tmp_path / "valid.npz"
    built = Catalog(memories(30), LexicalIndex())
    assert snapshot.save(source, built.lexical, built.links, built.by_id)  # type: ignore[arg-type]
    with np.load(source, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "pickled", "positions", "lengths", "tfs", "offsets", "names", "dtype", "missing", "link"],
)
def test_a_damaged_or_hostile_snapshot_is_ignored(tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "ran"
    monkeypatch.setenv("SNAPSHOT_MARKER", str(marker))
    path = tmp_path / "catalog.npz"
    arrays = _valid_arrays(tmp_path)
    if damage == "garbage":
        path.write_bytes(os.urandom(4096))
    elif damage == "truncated":
        _archive(path, arrays)
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "pickled":
        arrays["terms"] = np.array([_Marker()], dtype=object)
        _archive(path, arrays)
        assert pickle.dumps(_Marker())  # a real payload
    elif damage == "link":
        _archive(tmp_path / "elsewhere.npz", arrays)
        path.symlink_to(tmp_path / "elsewhere.npz")
    else:
        if damage == "positions":
            arrays["positions"][5] = 10_000
        elif damage == "lengths":
            arrays["lengths"][2] += 1
        elif damage == "tfs":
            arrays["tfs"][0] = np.nan
        elif damage == "offsets":
            arrays["term_offsets"][3] = arrays["term_offsets"][2]
        elif damage == "names":
            arrays["name_ids"][0] = 10_000
        elif damage == "dtype":
            arrays["positions"] = arrays["positions"].astype(np.float64)
        else:
            del arrays["tfs"]
        _archive(path, arrays)
    restored = Catalog(memories(30), LexicalIndex(), path)
    assert restored.from_snapshot == 0 and not marker.exists()
    same_rankings(Catalog(memories(30), LexicalIndex()), restored)


def test_the_untouched_archive_of_that_test_is_used(tmp_path: Path) -> None:
    """The damage test's valid arrays do load (its failures come from the damage, not the writing)."""
    path = tmp_path / "catalog.npz"
    _archive(path, _valid_arrays(tmp_path))
    assert zipfile.is_zipfile(path)
    assert Catalog(memories(30), LexicalIndex(), path).from_snapshot == 30


def test_delete_takes_a_write_cut_short_too(tmp_path: Path) -> None:
    """A process killed mid-write leaves its temporary file, which holds memories' words: a forget's
    delete removes it with the snapshot, and the next write clears it."""
    path = tmp_path / "catalog.npz"
    built = Catalog(memories(10), LexicalIndex())
    assert snapshot.save(path, built.lexical, built.links, built.by_id)  # type: ignore[arg-type]
    left = tmp_path / ".catalog.npz.999999.tmp"
    left.write_bytes(path.read_bytes()[:100])
    assert snapshot.save(path, built.lexical, built.links, built.by_id)  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.npz"]
    left.write_bytes(b"cut short")
    snapshot.delete(path)
    assert list(tmp_path.iterdir()) == []


def test_warm_up_freezes_what_it_built_and_restores_the_threads_switch_interval() -> None:
    """The collector's pause ends with what it built frozen (no collection walks it after), and the
    short GIL switch interval lasts until the last of two overlapping warm-ups leaves."""
    import gc
    import sys

    from graph.engine import lifecycle

    before, frozen = sys.getswitchinterval(), gc.get_freeze_count()
    with lifecycle._collection_paused():
        built = [[n] for n in range(1_000)]
    assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(built)
    with lifecycle._quick_handovers():
        with lifecycle._quick_handovers():
            assert sys.getswitchinterval() == lifecycle.WARM_SWITCH_INTERVAL_SEC
        assert sys.getswitchinterval() == lifecycle.WARM_SWITCH_INTERVAL_SEC
    assert sys.getswitchinterval() == before
