"""Architecture Decision Records (Nygard's format and MADR with front matter) as memories.

Each ADR becomes one summary under topicId `adr-NNNN` (its number). Statuses map onto the three the
contract has: Accepted -> DecisionRecord, Superseded -> Superseded (hidden from retrieval unless asked
for), anything else (Proposed, Deprecated, Rejected, ...) -> Active, with the ADR's own status kept in
the topic (`ADR-0007 (Rejected): ...`) and the first line of the context, so it is never lost or
mistaken for a decision in force. "Superseded by ADR-0012" in the old record, or "Supersedes ADR-0003"
in the new one, makes the old record Superseded.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graph.core.contract import MemoryStatus, format_timestamp, parse_timestamp

_NUMBER_IN_NAME = re.compile(r"^(?:adr[-_ ]?)?(\d{1,6})(?=[-_. ]|$)", re.IGNORECASE)
_NUMBER_IN_TITLE = re.compile(r"^(?:ADR[-_ ]?)?(\d{1,6})[.:)\- ]\s*", re.IGNORECASE)
_ADR_LINK = re.compile(
    r"(?:ADR[-_ ]?(\d{1,6}))|\[(?:ADR[-_ ]?)?(\d{1,6})\b[^\]]*\]|\((?:[^)]*/)?(\d{1,6})-[^)]*\.md\)", re.I
)
_SUPERSEDED_BY = re.compile(r"superseded\s+by\b(.*)", re.IGNORECASE)
_SUPERSEDES = re.compile(r"^\s*[-*]?\s*supersedes\b(.*)", re.IGNORECASE | re.MULTILINE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+(.*)")
_FIELD_LINE = re.compile(r"^\s*[-*]?\s*(status|date|deciders|technical story)\s*:\s*(.*)$", re.IGNORECASE)

STATUS_MAP = {"accepted": MemoryStatus.DECISION_RECORD, "superseded": MemoryStatus.SUPERSEDED}
"""ADR status -> memory status; any other ADR status (proposed, deprecated, rejected, draft) is Active."""

CONTEXT_SECTIONS = ("context", "context and problem statement", "problem statement", "background")
DECISION_SECTIONS = ("decision", "decision outcome", "decisions")
CONSEQUENCE_SECTIONS = ("consequences", "positive consequences", "negative consequences", "pros and cons")
DRIVER_SECTIONS = ("decision drivers",)
OPTION_SECTIONS = ("considered options",)


class AdrError(ValueError):
    """A file that is not an ADR this parser can read (no number, no title)."""


@dataclass
class Adr:
    number: int
    title: str
    status: str
    """The ADR's own status word, capitalised (Accepted, Rejected, Superseded...)."""
    path: str
    date: str | None
    context: str
    decisions: list[str]
    consequences: list[str]
    drivers: list[str]
    superseded_by: int | None = None
    supersedes: list[int] = field(default_factory=list)

    @property
    def topic_id(self) -> str:
        return f"adr-{self.number:04d}"

    def memory_status(self) -> MemoryStatus:
        if self.superseded_by is not None:
            return MemoryStatus.SUPERSEDED
        return STATUS_MAP.get(self.status.lower(), MemoryStatus.ACTIVE)

    def payload(self, now: str) -> dict[str, Any]:
        """The ingestForAgent params of this record (createdAt: the ADR's date; updatedAt: now)."""
        status = self.memory_status()
        label = f"ADR-{self.number:04d}"
        kept = "" if status is MemoryStatus.DECISION_RECORD else f" ({self.status})"
        status_line = f"Status: {self.status}" + (
            f", superseded by ADR-{self.superseded_by:04d}." if self.superseded_by else "."
        )
        references = [self.path]
        if self.superseded_by is not None:
            references.append(f"ADR-{self.superseded_by:04d}")
        references += [f"ADR-{n:04d}" for n in self.supersedes]
        prefix = "" if status is not MemoryStatus.ACTIVE or self.status.lower() == "proposed" else f"[{self.status}] "
        return {
            "topic": f"{label}{kept}: {self.title}",
            "context": f"{status_line}\n\n{self.context}".strip() if self.context else status_line,
            "decisions": [prefix + d for d in self.decisions],
            "rationale": self.drivers + [f"Consequence: {c}" for c in self.consequences],
            "references": references,
            "agentName": "flowbaby import adr",
            "metadata": {
                "topicId": self.topic_id,
                "createdAt": self.date or now,
                "updatedAt": now,
                "status": status.value,
            },
        }


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """MADR's YAML front matter as flat `key: value` pairs (the fields an ADR uses are scalars)."""
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text
    fields: dict[str, str] = {}
    for line in text[3:end].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t", "-")):
            fields[key.strip().lower()] = value.strip().strip("'\"")
    return fields, text[end + 4 :].lstrip("\n")


def _sections(body: str) -> tuple[str, list[tuple[str, str]]]:
    """(title, [(heading, text)]) outside fenced code; the text before the first `##` is the head."""
    title = ""
    sections: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match and len(match.group(1)) == 1 and not title:
            title = match.group(2)
        elif match and len(match.group(1)) <= 3:
            sections.append((match.group(2), []))
        else:
            sections[-1][1].append(line)
    return title, [(h, "\n".join(lines).strip()) for h, lines in sections]


def _items(text: str) -> list[str]:
    """Bullets as items, otherwise paragraphs; continuation lines joined."""
    items: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        if not _BULLET.match(lines[0]):
            items.append(" ".join(lines))
            continue
        for line in lines:
            bullet = _BULLET.match(line)
            if bullet:
                items.append(bullet.group(1))
            else:
                items[-1] += " " + line
    return [item.strip() for item in items if item.strip()]


def _adr_numbers(text: str) -> list[int]:
    found = [int(next(g for g in m.groups() if g)) for m in _ADR_LINK.finditer(text)]
    return list(dict.fromkeys(found))  # "[3. Title](0003-title.md)" names 3 twice


def _date(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return format_timestamp(parse_timestamp(value.strip()[:10]))
    except ValueError:
        return None


def parse_adr(path: Path, text: str, relative: str) -> Adr:
    """One ADR file; `relative` is the path recorded as its reference."""
    fields, body = _front_matter(text)
    title, sections = _sections(body)
    head = sections[0][1]
    for line in head.splitlines():  # MADR 2's "* Status: accepted", Nygard variants' "Date: ..."
        match = _FIELD_LINE.match(line)
        if match and match.group(1).lower() not in fields:
            fields[match.group(1).lower()] = match.group(2).strip()
    named = {h.lower().strip(): t for h, t in sections[1:]}
    status_text = fields.get("status") or named.get("status", "")
    number_match = _NUMBER_IN_NAME.match(path.name)
    title_match = _NUMBER_IN_TITLE.match(title)
    found_number = number_match or title_match
    if found_number is None:
        raise AdrError(f"{relative}: no ADR number in the file name or the title")
    number = int(found_number.group(1))
    if title_match:
        title = title[title_match.end() :]
    title = re.sub(r"^ADR[-_ ]?\d+\s*[:.\-]\s*", "", title, flags=re.IGNORECASE).strip()
    if not title:
        raise AdrError(f"{relative}: no title (a `# ` heading)")
    first_word = re.match(r"\W*([A-Za-z]+)", status_text)
    status_word = first_word.group(1) if first_word else "Proposed"
    superseded_by = None
    replaced = _SUPERSEDED_BY.search(status_text)
    if replaced:
        later = _adr_numbers(replaced.group(1))
        superseded_by = later[0] if later else None
        status_word = "Superseded"
    supersedes = [n for m in _SUPERSEDES.finditer(status_text) for n in _adr_numbers(m.group(1))]
    date_text = fields.get("date") or next(
        (line.split(":", 1)[1] for line in head.splitlines() if line.lower().startswith("date:")), None
    )

    def section(names: tuple[str, ...]) -> str:
        return "\n\n".join(named[n] for n in names if named.get(n))

    return Adr(
        number=number,
        title=title,
        status=status_word.capitalize(),
        path=relative,
        date=_date(date_text),
        context=section(CONTEXT_SECTIONS),
        decisions=_items(section(DECISION_SECTIONS)),
        consequences=_items(section(CONSEQUENCE_SECTIONS)),
        drivers=_items(section(DRIVER_SECTIONS))
        + [f"Considered option: {o}" for o in _items(section(OPTION_SECTIONS))],
        superseded_by=superseded_by,
        supersedes=supersedes,
    )


def read_adrs(folder: Path, base: Path, root: Path | None = None) -> tuple[list[Adr], list[str]]:
    """Every `*.md` ADR under `folder` (not README/index/template), links resolved both ways.
    Returns the records by number and the files skipped, each with why (one that resolves outside
    the repository `root`, default `base`, among them: never read)."""
    root = root or base
    adrs: dict[int, Adr] = {}
    skipped: list[str] = []
    for path in sorted(folder.rglob("*.md")):
        if path.stem.lower() in {"readme", "index", "template", "adr-template"}:
            continue
        try:
            real = inside(path, root)
        except OutsideRepository as exc:
            skipped.append(str(exc))
            continue
        relative = relative_path(real, base)
        try:
            adr = parse_adr(path, read_text_file(real), relative)
        except (AdrError, OSError, ValueError) as exc:
            skipped.append(f"{relative}: {exc}" if not isinstance(exc, AdrError) else str(exc))
            continue
        if adr.number in adrs:
            skipped.append(f"{relative}: ADR {adr.number} is also {adrs[adr.number].path}")
            continue
        adrs[adr.number] = adr
    for adr in adrs.values():  # "Supersedes N" in the newer record supersedes N too
        for older in adr.supersedes:
            if older in adrs and adrs[older].superseded_by is None:
                adrs[older].superseded_by = adr.number
    return [adrs[n] for n in sorted(adrs)], skipped


class OutsideRepository(ValueError):
    """A file or folder that resolves, through `..` or a symlink, outside the repository being imported:
    a cloned repository may commit `.adr-dir` = `../..` or a link to `~/.netrc`."""


def inside(path: Path, root: Path) -> Path:
    """`path` with every link and `..` resolved, if that is inside `root` (resolved); else OutsideRepository
    naming the file as given and where it leads."""
    real, top = path.resolve(), root.resolve()
    if not real.is_relative_to(top):
        shown = path.relative_to(top) if path.is_relative_to(top) else path
        raise OutsideRepository(f"{shown}: refused: it resolves to {real}, outside the repository {top}")
    return real


def read_text_file(path: Path) -> str:
    """A markdown file's text; ValueError (UnicodeDecodeError among them) for one that is not UTF-8 text
    or holds NUL (U+0000), which no memory may hold (contract section 8): skipped, not fatal to an import.
    `path` is resolved already (inside): a link put there since is not followed (ELOOP, an OSError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError("not a regular file")
        text = handle.read().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as text mode reads
    if "\x00" in text:
        raise ValueError("holds NUL (U+0000) characters, not text")
    return text


def relative_path(path: Path, base: Path) -> str:
    """How a file is recorded in references: relative to the workspace when inside it."""
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def now_stamp() -> str:
    return format_timestamp(datetime.now(UTC))
