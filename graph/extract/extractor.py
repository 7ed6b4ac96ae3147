"""Deterministic, offline entity and relation extraction: the LLM's stand-in in cognee.

cognee's cognify step hands each chunk to an LLM and asks for a knowledge graph
(typed nodes and named edges) and a summary. flowbaby must work with no key, no
network and no model download, and must give the same graph for the same text, so
graph.cognify.worker.offline_llm answers those prompts with this module instead.

It reads the memory document rendered by graph.cognify.worker.document (title, "Plan:" and
"Session:" header lines, "## Decisions" and the other sections), or any free text,
and finds entities with plain rules: regular expressions for paths, tickets, error
codes, code symbols and dates, small built-in lexicons for technologies, first
names, places and organisations, and head-noun rules for technical noun phrases.
Every entity is keyed by `normalise`, so two documents weeks apart that write
"Redis cache" and "redis" meet at one node: that shared key is what multi-hop
retrieval walks over. Only the standard library is used.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable
from typing import Any, NamedTuple

from graph.core.sentences import sentences
from graph.extract.patterns import _MASK, _Mention, _mention, _pattern_mentions, _plan_key
from graph.extract.vocabulary import (
    _ALIASES,
    _AMBIGUOUS_TECH,
    _CALENDAR,
    _COMPONENT_HEADS,
    _FIRST_NAMES,
    _GENERIC,
    _HEADS,
    _ORG_SUFFIXES,
    _ORGANIZATIONS,
    _PLACE_CUES,
    _PLACE_PREFIXES,
    _PLACE_SUFFIXES,
    _PLACES,
    _PLURAL_MODIFIERS,
    _STOPWORDS,
    _TECH,
    _TECH_FIRST_WORDS,
    _TRAIL_PUNCT,
    _UNIT_ACRONYMS,
    _WEAK_ADJECTIVES,
    _singular,
    _words,
    normalise,
)

_TITLE = re.compile(r"#\s+Topic\s*:\s*(.*)", re.IGNORECASE)
_HEADER = re.compile(
    r"(Topic ID|Version|Status|Plan|Session|Agent|Time scope|Created|Updated)\s*:\s*(.*)", re.IGNORECASE
)
_HEADING = re.compile(r"#{1,6}\s+(.+?)[\s#]*")
_BULLET = re.compile(r"\s*(?:[-*+•]|\d{1,3}[.)])\s+(.*)")


class _Doc(NamedTuple):
    title: str | None
    headers: dict[str, str]
    blocks: list[tuple[str, str]]  # (section, text) per paragraph or bullet; the title is section "title"


def _parse(text: str) -> _Doc:
    """Split a rendered memory (or free text) into title, header lines and section blocks."""
    title: str | None = None
    headers: dict[str, str] = {}
    blocks: list[tuple[str, str]] = []
    paragraph: list[str] = []
    section, in_bullet = "text", False

    def flush() -> None:
        if paragraph:
            blocks.append((section, " ".join(paragraph)))
            paragraph.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
            in_bullet = False
        elif title is None and (match := _TITLE.fullmatch(line)):
            title = match.group(1).strip() or None
        elif section == "text" and not blocks and not paragraph and (match := _HEADER.fullmatch(line)):
            headers[match.group(1).casefold()] = match.group(2).strip()
        elif match := _HEADING.fullmatch(line):
            flush()
            section, in_bullet = match.group(1).strip().casefold(), False
        elif match := _BULLET.fullmatch(raw):
            flush()
            blocks.append((section, match.group(1).strip()))
            in_bullet = True
        elif in_bullet and raw[:1].isspace():
            blocks[-1] = (section, f"{blocks[-1][1]} {line}")
        else:
            paragraph.append(line)
            in_bullet = False
    flush()
    if title:
        blocks.insert(0, ("title", title))
    return _Doc(title, headers, blocks)


# --- mentions found by pattern -----------------------------------------------------


_WORD = re.compile(r"[^\W_][\w'’-]*")
_POSSESSIVE = re.compile(r"['’]s?$")
_OPENERS = " \t\"'([{*•>-–—"


class _Token(NamedTuple):
    start: int
    end: int
    text: str
    fold: str
    cap: bool
    at_start: bool
    joined: bool  # separated from the previous token by spaces only, so the two can form one name


def _tokens(masked: str) -> list[_Token]:
    """Words of the unmasked text; possessives trimmed, contractions dropped."""
    tokens: list[_Token] = []
    previous_end = 0
    for match in _WORD.finditer(masked):
        text = match.group(0).rstrip("-'’")
        if "'" in text or "’" in text:
            text = _POSSESSIVE.sub("", text)
            if "'" in text or "’" in text:
                continue
        gap = masked[previous_end : match.start()]
        at_start = (not tokens and not gap.strip(_OPENERS)) or gap.rstrip().endswith(":")
        joined = bool(tokens) and gap != "" and gap.strip(" \t") == ""
        tokens.append(
            _Token(match.start(), match.start() + len(text), text, text.casefold(), text[0].isupper(), at_start, joined)
        )
        previous_end = match.start() + len(text)
    return tokens


def _known_capital(token: _Token) -> bool:
    """Capitals that stay meaningful in Title Case text: names, technologies, acronyms."""
    fold = token.fold
    return (
        fold in _FIRST_NAMES
        or fold in _TECH
        or fold in _ALIASES
        or fold in _PLACES
        or fold in _ORGANIZATIONS
        or fold in _TECH_FIRST_WORDS
        or token.text.isupper()
    )


def _demote_title_case(tokens: list[_Token], in_title: bool) -> list[_Token]:
    """In "Migrate Session Cache To Redis" capitals carry no meaning: read it lower-case.
    A sentence's first word is capitalised anyway, so it does not count."""
    candidates = [t for t in tokens if len(t.text) > 3 and not _known_capital(t) and not t.at_start]
    capitals = sum(t.cap for t in candidates)
    needed = 1 if in_title else 4
    if capitals < needed or capitals < len(candidates) * (0.5 if in_title else 0.75):
        return tokens
    return [t._replace(cap=False) if t.cap and not _known_capital(t) else t for t in tokens]


def _tech_span(tokens: list[_Token], i: int) -> int | None:
    """End of the longest lexicon technology starting at token i (taking a generic word after it)."""
    longest = 3 if tokens[i].fold in _TECH_FIRST_WORDS else 1
    for length in range(min(longest, len(tokens) - i), 0, -1):
        if not all(tokens[k].joined for k in range(i + 1, i + length)):
            continue
        key = " ".join(t.fold for t in tokens[i : i + length])
        key = _ALIASES.get(key, key)
        if key not in _TECH:
            continue
        first = tokens[i]
        if key in _AMBIGUOUS_TECH and (not first.cap or (first.at_start and first.fold in _STOPWORDS)):
            continue
        end = i + length
        if end < len(tokens) and tokens[end].joined and _singular(tokens[end].fold) in _GENERIC:
            end += 1
        return end
    return None


def _product_end(tokens: list[_Token], end: int) -> int:
    """A technology followed by capitalised words names one product: "Kafka Connect",
    "GitHub Actions", "React Hook Form" are not Kafka, GitHub or React. An acronym after
    it is a thing of its own ("Airflow DAG", "Redis INCR"), unless it is generic ("API")."""
    while (
        end < len(tokens)
        and tokens[end].joined
        and _name_word(tokens[end])
        and not tokens[end].text.isupper()
        and not _tech_span(tokens, end)
    ):
        end += 1
    if end < len(tokens) and tokens[end].joined and tokens[end].cap and tokens[end].fold in _GENERIC:
        end += 1
    return end


def _name_word(token: _Token) -> bool:
    return token.cap and token.text[0].isalpha() and token.fold not in _STOPWORDS and token.fold not in _CALENDAR


def _proper_kind(run: list[_Token], cue: str) -> str | None:
    """Type a capitalised run; None when it is just a sentence-initial word."""
    folds = [t.fold for t in run]
    joined = " ".join(folds)
    if len(run) > 1:
        if folds[-1] in _ORG_SUFFIXES or joined in _ORGANIZATIONS:
            return "organization"
        if folds[0] in _FIRST_NAMES:
            return "person"
        if joined in _PLACES or folds[-1] in _PLACE_SUFFIXES or folds[0] in _PLACE_PREFIXES or cue in _PLACE_CUES:
            return "place"
        return "component" if _singular(folds[-1]) in _COMPONENT_HEADS else "concept"
    if joined in _ORGANIZATIONS:
        return "organization"
    if joined in _PLACES:
        return "place"
    if run[0].text.isupper():
        return "concept" if len(run[0].text) > 1 and joined not in _UNIT_ACRONYMS else None
    if joined in _FIRST_NAMES:
        return "person"
    if run[0].at_start:
        return None
    return "place" if cue in _PLACE_CUES else "concept"


def _head_at(tokens: list[_Token], i: int) -> bool:
    """A lower-case technical head noun, unless the next word is a head too ("cache service")."""
    token = tokens[i]
    if token.cap or _singular(token.fold) not in _HEADS:
        return False
    following = tokens[i + 1] if i + 1 < len(tokens) else None
    return not (following and following.joined and not following.cap and _singular(following.fold) in _HEADS)


_PREFIXES = _words("cross multi non pre post re per sub inter intra self co anti semi well")


def _kebab_kind(token: _Token) -> str | None:
    """A lower-case kebab name: a component when it ends in a component head ("api-gateway",
    "auth-service"), a technology when a part names one ("vitest-axe"); else a compound word."""
    parts = token.fold.split("-")
    if token.cap or len(parts) < 2 or not all(part.isalnum() for part in parts):
        return None
    if parts[0] in _PREFIXES or parts[0] in _STOPWORDS or parts[0] in _WEAK_ADJECTIVES:
        return None
    if _singular(parts[-1]) in _COMPONENT_HEADS:
        return "component"
    return "technology" if any(p in _TECH and p not in _AMBIGUOUS_TECH for p in parts) else None


def _sentence_capital(tokens: list[_Token], i: int, end: int) -> bool:
    """A sentence's first word, not itself a known name, before a known name: "Tell Julia
    Novak", "Ask Nora" (a bullet's verb rather than part of the name)."""
    token = tokens[i]
    return (
        end - i > 1
        and token.at_start
        and not token.text.isupper()
        and not _known_capital(token)
        and _known_capital(tokens[i + 1])
    )


def _modifier(token: _Token) -> bool:
    """A word that can narrow a head noun. Compounds take singular modifiers ("session
    cache"), so a word with a plural -s is a verb or a list ("supports", "misses")."""
    return (
        not token.cap
        and token.text.replace("-", "").isalpha()
        and token.fold not in _STOPWORDS
        and token.fold not in _WEAK_ADJECTIVES
        and token.fold not in _CALENDAR
        and (_singular(token.fold) == token.fold or token.fold in _PLURAL_MODIFIERS)
    )


def _word_mentions(masked: str, in_title: bool) -> list[_Mention]:
    """Technologies, proper nouns and technical noun phrases, left to right in one pass."""
    tokens = _demote_title_case(_tokens(masked), in_title)
    found: list[_Mention] = []
    i, free = 0, 0
    while i < len(tokens):
        token = tokens[i]
        end = _tech_span(tokens, i)
        if end:
            end = _product_end(tokens, end)
            found.append(_mention(token.start, masked[token.start : tokens[end - 1].end], "technology"))
            i = free = end
            continue
        if _name_word(token):
            end = i + 1
            while end < len(tokens) and tokens[end].joined and _name_word(tokens[end]) and not _tech_span(tokens, end):
                end += 1
            if _sentence_capital(tokens, i, end):
                i += 1  # "Ask Nora", "Watch Crashlytics": a verb before the name
                continue
            cue = tokens[i - 1].fold if i and token.joined else ""
            kind = _proper_kind(tokens[i:end], cue) if end - i <= 4 else None
            if kind:
                found.append(_mention(token.start, masked[token.start : tokens[end - 1].end], kind))
            i = free = end
            continue
        kebab = _kebab_kind(token)
        if kebab:
            found.append(_mention(token.start, token.text, kebab))
            i = free = i + 1
            continue
        if _head_at(tokens, i):
            first = i
            while first > max(free, i - 2) and tokens[first].joined and _modifier(tokens[first - 1]):
                first -= 1
            if first < i:
                kind = "component" if _singular(token.fold) in _COMPONENT_HEADS else "concept"
                found.append(_mention(tokens[first].start, masked[tokens[first].start : token.end], kind))
                free = i + 1
        i += 1
    return found


_MAX_SURFACE = 300
"""Longer "names" are runaway matches on degenerate input (a 100 KB word), not entities."""


def _sentence_mentions(sentence: str, in_title: bool) -> tuple[str, list[_Mention]]:
    """All mentions in one sentence, by position, and the masked sentence relations are read from."""
    masked, found = _pattern_mentions(sentence)
    found.extend(_word_mentions(masked, in_title))
    found.sort(key=lambda m: (m.start, m.end))
    return masked, [m for m in found if m.key and len(m.surface) <= _MAX_SURFACE]


# --- stated relations ---------------------------------------------------------------

_WINDOW = 200
_USES = re.compile(r"(?i)\b(?:uses|used(?!\s+by\b)|using|utili[sz]es)\b")
_MOVES = re.compile(r"(?i)\b(?:mov(?:e|es|ed|ing)|migrat(?:e|es|ed|ing|ion)|switch(?:es|ed|ing)?|port(?:ed|ing))\b")
_REPLACES = re.compile(r"(?i)\b(?:replac|supersed)(?:e|es|ed|ing)\b")
_DEPENDS = re.compile(r"(?i)\b(?:depend(?:s|ed|ing)?|rel(?:y|ies|ied|ying))\s+(?:up)?on\b")
_FROM = re.compile(r"(?i)\bfrom\b")
_TO = re.compile(r"(?i)\b(?:to|onto|into)\b")
_BY = re.compile(r"(?i)\s+by\b")
_WITH = re.compile(r"(?i)\b(?:with|by)\b")


class _Mentions:
    """Mentions of one sentence, searchable by position."""

    def __init__(self, mentions: list[_Mention]) -> None:
        self.items = mentions
        self.starts = [m.start for m in mentions]

    def after(self, position: int, limit: int | None = None) -> _Mention | None:
        """First mention starting at or after position (and before limit)."""
        index = bisect_left(self.starts, position)
        if index == len(self.items) or (limit is not None and self.items[index].start >= limit):
            return None
        return self.items[index]

    def before(self, position: int) -> _Mention | None:
        """Nearest mention ending at or before position."""
        index = bisect_left(self.starts, position) - 1
        while index >= 0 and self.items[index].end > position:
            index -= 1
        return self.items[index] if index >= 0 else None


def _moves(masked: str, mentions: _Mentions, trigger: re.Match[str]) -> tuple[_Mention | None, _Mention | None]:
    """ "moving the cache from Memcached to Redis" and "migrate the cache to Redis"."""
    window_end = min(len(masked), trigger.end() + _WINDOW)
    source_from = _FROM.search(masked, trigger.end(), window_end)
    start = source_from.end() if source_from else trigger.end()
    to = _TO.search(masked, start, window_end)
    if not to:
        return None, None
    return mentions.after(start, to.start()), mentions.after(to.end())


def _replaces(masked: str, mentions: _Mentions, trigger: re.Match[str]) -> tuple[_Mention | None, _Mention | None]:
    """ "X was replaced by Y", "replace X with Y", and "Y replaces X"."""
    if _BY.match(masked, trigger.end()):
        return mentions.before(trigger.start()), mentions.after(trigger.end())
    window_end = min(len(masked), trigger.end() + _WINDOW)
    by = _WITH.search(masked, trigger.end(), window_end)
    if by:
        return mentions.after(trigger.end(), by.start()), mentions.after(by.end())
    return mentions.after(trigger.end()), mentions.before(trigger.start())


def _forward(masked: str, mentions: _Mentions, trigger: re.Match[str]) -> tuple[_Mention | None, _Mention | None]:
    """ "X uses Y", "X depends on Y": the nearest mention either side."""
    return mentions.before(trigger.start()), mentions.after(trigger.end())


_Reader = Callable[[str, _Mentions, re.Match[str]], tuple[_Mention | None, _Mention | None]]
_RELATIONS: tuple[tuple[str, re.Pattern[str], _Reader], ...] = (
    ("uses", _USES, _forward),
    ("moved_to", _MOVES, _moves),
    ("replaced_by", _REPLACES, _replaces),
    ("depends_on", _DEPENDS, _forward),
)


def _stated_relations(masked: str, mentions: list[_Mention]) -> list[tuple[str, str, str]]:
    """(source key, relationship, target key) for the relations a sentence states."""
    index = _Mentions(mentions)
    found: list[tuple[str, str, str]] = []
    if masked.rstrip(_TRAIL_PUNCT.replace("?", "")).endswith("?"):
        return found  # "Should we replace X with Y?" asks; it does not state
    for name, pattern, read in _RELATIONS:
        for trigger in pattern.finditer(masked):
            source, target = read(masked, index, trigger)
            if source and target and source.key != target.key:
                found.append((source.key, name, target.key))
    return found


# --- graph assembly -----------------------------------------------------------------


def _trim(text: str, limit: int) -> str:
    """Cut at a word boundary so names and evidence stay readable."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] or text[: limit - 1]
    return cut.rstrip(" ,;:") + "…"


class _Node:
    __slots__ = ("key", "kind", "description", "surfaces", "display")

    def __init__(self, key: str, kind: str, description: str, display: str | None) -> None:
        self.key = key
        self.kind = kind
        self.description = description
        self.surfaces: dict[str, int] = {}
        self.display = display

    def name(self) -> str:
        """The lexicon's spelling for technologies, else the most frequent surface form."""
        if self.display:
            return self.display
        return max(self.surfaces.items(), key=lambda item: item[1])[0] if self.surfaces else self.key


class _Graph:
    """Nodes and edges in first-seen order, so the output is deterministic."""

    def __init__(self, title: str | None) -> None:
        self.title = title
        self.nodes: dict[str, _Node] = {}
        self.edges: dict[tuple[str, str, str], str] = {}

    def node(self, key: str, kind: str, surface: str, description: str) -> str:
        node = self.nodes.get(key)
        if node is None:
            display = _TECH.get(key) if kind == "technology" else None
            node = self.nodes[key] = _Node(key, kind, description, display)
        elif node.kind == "concept":
            node.kind = kind  # a later, more specific reading wins over the fallback type
        surface = " ".join(surface.split())
        node.surfaces[surface] = node.surfaces.get(surface, 0) + 1
        return key

    def edge(self, source: str, relationship: str, target: str, evidence: str = "") -> None:
        if source != target:
            self.edges.setdefault((source, relationship, target), evidence)

    def where(self, section: str) -> str:
        """Node provenance: "Mentioned in decisions of 'Plan 015 …'"."""
        place = {"text": "free text"}.get(section, section)
        return f"Mentioned in {place} of '{self.title}'" if self.title else f"Mentioned in {place}"

    def export(self) -> dict[str, list[dict[str, Any]]]:
        nodes = [
            {"id": n.key, "name": n.name(), "type": n.kind, "description": n.description, "aliases": list(n.surfaces)}
            for n in self.nodes.values()
        ]
        edges = []
        for (source, relationship, target), evidence in self.edges.items():
            text = f"{self.nodes[source].name()} {relationship.replace('_', ' ')} {self.nodes[target].name()}"
            edges.append(
                {
                    "source_node_id": source,
                    "target_node_id": target,
                    "relationship_name": relationship,
                    "description": f'{text}: "{evidence}"' if evidence else text,
                }
            )
        return {"nodes": nodes, "edges": edges}


def _clean(text: str) -> str:
    """NFKC (full-width and ligature forms read as plain text); the mask character is reserved."""
    return unicodedata.normalize("NFKC", text).replace(_MASK, " ")


def _add_header_nodes(graph: _Graph, doc: _Doc) -> str | None:
    """The topic, plan and session nodes; returns the topic's key."""
    if not doc.title:
        return None
    topic = graph.node(f"topic:{normalise(doc.title)}", "topic", doc.title, _topic_description(doc))
    plan = doc.headers.get("plan")
    if plan:
        graph.node(_plan_key(plan), "plan", plan, f"Plan {plan}, which contains the topic '{doc.title}'")
        graph.edge(_plan_key(plan), "contains", topic)
    session = doc.headers.get("session")
    if session:
        key = f"session:{normalise(session)}"
        graph.node(key, "session", session, f"Session {session}, in which '{doc.title}' was recorded")
        graph.edge(topic, "part_of_session", key)
    return topic


def _topic_description(doc: _Doc) -> str:
    facts = [
        f"{label} {doc.headers[key]}"
        for key, label in (("topic id", "topic id"), ("status", "status"))
        if doc.headers.get(key)
    ]
    return f"Memory topic '{doc.title}'" + (f" ({', '.join(facts)})" if facts else "")


def _decision_node(graph: _Graph, text: str) -> str:
    """A decision is keyed by a hash of its text, so restating it elsewhere meets the same node."""
    digest = hashlib.sha1(normalise(text).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    origin = f"Decision recorded in '{graph.title}'" if graph.title else "Decision recorded in a memory"
    return graph.node(f"decision:{digest}", "decision", _trim(text, 120), origin)


@functools.lru_cache(maxsize=256)
def query_names(text: str) -> tuple[tuple[str, str], ...]:
    """The (name, type) of every entity a query names. Cached: one retrieval asks for the same
    query's names from the graph lane and from abstention, and agents repeat their queries."""
    return tuple((node["name"], node["type"]) for node in extract_graph(text)["nodes"])


def extract_graph(text: str) -> dict[str, list[dict[str, Any]]]:
    """The knowledge graph of one memory document (or free text), as cognee's LLM would return it.

    Nodes: {"id", "name", "type", "description", "aliases"}; edges: {"source_node_id",
    "target_node_id", "relationship_name", "description"}. Same text, same output.
    """
    doc = _parse(_clean(text))
    graph = _Graph(doc.title)
    topic = _add_header_nodes(graph, doc)
    for section, block in doc.blocks:
        decision = _decision_node(graph, block) if section.startswith("decision") else None
        if decision and topic:
            graph.edge(topic, "decided", decision)
        for sentence in sentences(block):
            masked, mentions = _sentence_mentions(sentence, section == "title")
            for mention in mentions:
                key = graph.node(mention.key, mention.kind, mention.surface, graph.where(section))
                if topic:
                    graph.edge(topic, "mentions", key)
                if decision:
                    graph.edge(decision, "about", key)
            for source, relationship, target in _stated_relations(masked, mentions):
                graph.edge(source, relationship, target, _trim(sentence, 160))
    return graph.export()


def summarize(text: str) -> str:
    """A short deterministic summary in place of the LLM's: the gist plus the decisions.

    A memory gives "Title: first sentence of the context" and its decisions as bullets;
    free text gives its first two sentences. At most 600 characters.
    """
    doc = _parse(_clean(text))
    body = [block for section, block in doc.blocks if section != "title"]
    context = [block for section, block in doc.blocks if section == "context"] or body
    if doc.title:
        lead = sentences(context[0])[0] if context else ""
        head = f"{doc.title}: {lead}" if lead else doc.title
    else:
        lead_sentences = [s for block in body for s in sentences(block)[:2]][:2]
        head = " ".join(lead_sentences)
    lines = [_trim(head, 600)] if head.strip() else []
    for section, block in doc.blocks:
        if section.startswith("decision"):
            line = f"- {_trim(block, 200)}"
            if sum(len(existing) + 1 for existing in lines) + len(line) > 600:
                break
            lines.append(line)
    return "\n".join(lines)
