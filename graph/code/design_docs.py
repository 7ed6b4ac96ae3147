"""Markdown design documents as memories: one summary per section (headings of levels 1-3), with
the file and the heading as references. The topicId is `doc:<path>#<heading slug>`, so re-importing
a changed section makes a new version of it and an unchanged one adds nothing."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.core.contract import MAX_PAYLOAD_CHARS

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SPLIT_LEVEL = 3
"""Headings down to `###` start a section; deeper ones stay in their section's text."""
TOPIC_ID_CHARS = 256


@dataclass
class DocSection:
    path: str
    title: str
    """The document's title (its first `# ` heading, else the file name)."""
    heading: str
    slug: str
    text: str

    @property
    def topic_id(self) -> str:
        topic_id = f"doc:{self.path}#{self.slug}"
        return topic_id if len(topic_id) <= TOPIC_ID_CHARS else topic_id[: TOPIC_ID_CHARS - 9] + "~" + _digest(topic_id)

    def payload(self, now: str, created: str) -> dict[str, Any]:
        topic = self.title if self.heading == self.title else f"{self.title}: {self.heading}"
        return {
            "topic": topic,
            "context": self.text[: MAX_PAYLOAD_CHARS - len(topic) - 1000],
            "references": [self.path, f"{self.path}#{self.slug}"],
            "agentName": "flowbaby import docs",
            "metadata": {"topicId": self.topic_id, "createdAt": created, "updatedAt": now, "status": "Active"},
        }


def slugify(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower())) or "section"


def parse_doc(text: str, relative: str) -> list[DocSection]:
    """The sections of one markdown file that hold text (fenced code never starts a section)."""
    fallback = Path(relative).stem.replace("-", " ").replace("_", " ")
    title = ""
    sections: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match and len(match.group(1)) <= SPLIT_LEVEL:
            heading = match.group(2).strip()
            if len(match.group(1)) == 1 and not title:
                title = heading
            sections.append((heading, []))
        else:
            sections[-1][1].append(line)
    title = title or fallback
    found: list[DocSection] = []
    seen: dict[str, int] = {}
    for heading, lines in sections:
        body = "\n".join(lines).strip()
        if not heading and not body:
            continue  # no text before the first heading
        heading = heading or title
        slug = slugify(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            slug = f"{slug}-{count}"  # GitHub numbers repeated anchors the same way
        if body:
            found.append(DocSection(relative, title, heading, slug, body))
    return found


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]
