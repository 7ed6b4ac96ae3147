"""The documents a person reads stay readable and whole (issue 47 item 5): INGEST_CONTRACT.md holds
the bridge's ingest and retrieval protocol in at most 1,200 lines, each other surface's file in
docs/contract/ at most 600, the README at most 250; and every relative link in them, and in any
docs/**/*.md, names a file that exists (and, for a markdown file, a heading that exists)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LIMITS = {"INGEST_CONTRACT.md": 1200, "README.md": 250}
CONTRACT_PART_LIMIT = 600
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)[^)]*\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "INGEST_CONTRACT.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _outside_fences(path: Path) -> list[str]:
    """The file's lines that are not inside a fenced code block (links there are examples)."""
    kept: list[str] = []
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            kept.append(line)
    return kept


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    for line in _outside_fences(path):
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            slug = _slug(match.group(1))
            anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return frozenset(anchors)


def _broken_links(path: Path) -> list[str]:
    broken: list[str] = []
    for line in _outside_fences(path):
        for match in LINK.finditer(re.sub(r"`[^`]*`", "", line)):  # code spans show syntax
            target = match.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    return broken


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_top_level_documents_stay_short(name: str) -> None:
    lines = len((ROOT / name).read_text(encoding="utf-8").splitlines())
    assert lines <= LIMITS[name], f"{name} has {lines} lines, at most {LIMITS[name]}"


def test_each_contract_part_stays_short() -> None:
    parts = sorted((ROOT / "docs" / "contract").glob("*.md"))
    assert parts, "docs/contract/ holds the contract's other surfaces"
    long = {p.name: n for p in parts if (n := len(p.read_text(encoding="utf-8").splitlines())) > CONTRACT_PART_LIMIT}
    assert not long, f"over {CONTRACT_PART_LIMIT} lines: {long}"


def test_the_contract_index_names_every_part() -> None:
    index = (ROOT / "INGEST_CONTRACT.md").read_text(encoding="utf-8")
    missing = [p.name for p in (ROOT / "docs" / "contract").glob("*.md") if f"docs/contract/{p.name}" not in index]
    assert not missing, f"not in INGEST_CONTRACT.md's index: {missing}"


@pytest.mark.parametrize("path", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    assert not _broken_links(path)


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    """The checker itself: a missing file and a missing heading are reported, good links are not."""
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading, too\n", encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Doc\n[ok](other.md) [ok](other.md#a-code-heading-too) [ok](#doc) [web](https://example.com)\n"
        "[gone](missing.md) [no heading](other.md#nope) `[in code](code.md)`\n```\n[in a fence](fenced.md)\n```\n",
        encoding="utf-8",
    )
    broken = [entry.split(":")[0] for entry in _broken_links(doc)]
    assert broken == ["missing.md", "other.md#nope"]
