"""Reconcile on write (issue 50): is a new memory a repeat, a new version, or a replacement of a live one?

Agents store the same decision again under new topics, restate it, and later replace it under yet
another topic. Before a memory without an explicit topicId is staged, its live neighbours (nearest
by vector over every chunk, and by BM25, to its topic and decisions; graph.search.reconciler) are
compared with it, each with every version of its topic:

- **skip**: the same words (after case, spacing and punctuation) or almost (cosine >= SKIP_COSINE
  and word overlap >= SKIP_OVERLAP). The new memory is stored `Superseded`, so nothing is lost.
- **replace**: the new memory retires a name the candidate decided ("moved logs from Elasticsearch
  to Loki", read as graph.search.supersession reads it) and is about the same subject once that name
  is taken out of both (cosine >= RETIRED_SUBJECT); or it is the same subject (cosine >= SAME_SUBJECT)
  and says it changed ("now", "instead of", "raised to"). The older ones become `Superseded`.
- **update**: the same subject without a change cue: a new version of the candidate's topic, so the
  older version is superseded as versions always are.
- **add**: anything else. A candidate at cosine >= SUGGEST_COSINE (or a replacement cue that is not
  clear enough) is returned as a suggestion and changes nothing: precision first.

The cosine is over the "subject" text (topic and decisions) with the names one of them retires
taken out, so a look-alike that only shares the replaced name ("the search index stays in
Elasticsearch") is not the same subject as the logs. Thresholds were chosen on the `tune` split of
tests/bench/data/reconcile (never on `heldout`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from graph.capture.chatter import is_chatter
from graph.core.memories import Memory
from graph.core.text import STOPWORDS, light_stem
from graph.extract.extractor import extract_graph
from graph.search.supersession import LIVE, _mentions, _pattern, _retired_names  # its reading of names, reused

Action = Literal["add", "update", "replace", "skip"]
ACTIONS: tuple[Action, ...] = ("add", "update", "replace", "skip")

CANDIDATES = 8
"""Live memories compared with a new one by vector (chunks of one memory count once)."""
LEXICAL_CANDIDATES = 3
"""... and by BM25, besides those."""
SKIP_COSINE = 0.97
SKIP_OVERLAP = 0.8
SAME_SUBJECT = 0.68
"""Cosine of two subject texts from which on they are one subject (tune split: look-alikes <= 0.66)."""
RETIRED_SUBJECT = 0.42
"""With the retired name taken out of both texts, the cosine from which a holder of it is the subject
that was replaced (tune split: look-alikes holding the name <= 0.37, the subjects replaced >= 0.43)."""
RETIRED_NEAR = 0.3
RETIRED_SCORE = 0.6
"""... or from RETIRED_NEAR when cosine and word overlap add up to RETIRED_SCORE (tune split: replaced
subjects 0.63-1.2, look-alikes holding the name <= 0.52)."""
ALSO_RESTATES = 0.35
"""A replacement also supersedes a further candidate (one that retires the same name, or is replaced on
its own) only when it restates the one replaced (cosine of their versions; tune split: restatements
0.36-0.56, look-alikes holding the name <= 0.26)."""
SAME_NAMED_SUBJECT = 0.63
"""... and from this cosine on when both name the same thing (tune split, each pair alone: restatements
taken by this rule 0.64-0.67; look-alikes naming the thing a subject's memory decided 0.55-0.62: the
partner API "stays REST" beside the mobile apps' REST API, Sentry performance traces beside Sentry
error reports, the public demo image on Docker Hub beside the service images)."""
PHRASE_SUBJECT = 0.15
"""A memory holding every word of what the new one sets aside in words of its own (retired_phrases) is
replaced from this cosine on (tune split: the holders 0.17-0.74, no look-alike holds such a phrase)."""
SUGGEST_COSINE = 0.5
ONE_SUBJECT = 3
"""Decisions (chatter aside) a memory about one subject has at most (the labelled set: 1-3; LoCoMo's
sessions, 3-15 facts each, of one conversation are at cosine 0.73-0.83 with one another)."""

SCOPES: dict[str, re.Pattern[str]] = {
    name: re.compile(r"(?i)\b(?:" + words + r")\b")
    for name, words in {
        "web": r"front-?end|web ?app|website|browser|storefront",
        "mobile": r"mobile|ios|android|react native|app store",
        "desktop": r"desktop|electron",
        "cli": r"cli|command-line|command line",
        "admin": r"admin",
        "docs": r"docs|documentation|markdown",
        "partner": r"partners?|integrators|third-party",
        "notebooks": r"notebooks?|jupyter",
    }.items()
}
"""Who or what part of the product a decision is for. Two memories each naming such parts, none in
common, are about different subjects however alike their words (tune split: the docs' line length
beside the CLI's help width, React Native's state beside the web app's, the admin CLI's HTTP library
beside the services' partner calls, the partner API beside the mobile API): never updated nor
replaced automatically, a suggestion at most."""

_CHANGE = re.compile(
    r"(?i)\b(?:instead of|now|no longer|switched|moved|migrated|replaced|replaces|dropped|retired|raised|lowered|"
    r"changed|increased|decreased|reduced|bumped|from\s+\S+(?:\s+\S+)?\s+to)\b"
)
_PHRASES = (
    re.compile(r"(?i)\breplaced\s+(?:the |our |a |an )?([\w.+#/ -]{3,40}?)\s+with\b"),
    re.compile(
        r"(?i)(?:^|[;:,.]\s+)([\w.+#/ -]{3,40}?)\s+(?:is|are|was|were)\s+(?:now\s+)?"
        r"(?:retired|dropped|deprecated|removed|gone)\b"
    ),
    re.compile(r"(?i)\binstead of\s+(?:the |our |a |an )?([\w.+#/ -]{3,40}?)(?=[.;,)]|$)"),
)
"""Where a decision names what it sets aside in words of its own, not a name ("replaced the billing ORM
layer with", "the develop branch is retired", "instead of auto-increment integers")."""
_TOKEN = re.compile(r"[\w.+#/=?'-]*\w")
_NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
_NUMBERS = {word: str(n) for n, word in enumerate(_NUMBER_WORDS)}
"""A number written as a word is the same value as its digits ("five minutes", "5 minutes")."""
_PUNCT = re.compile(r"[^\w\s]+")
_WORD = re.compile(r"[a-z0-9][a-z0-9.+#-]*")


@dataclass
class Candidate:
    """A live memory the new one may repeat or replace, with what was measured about the pair."""

    memory: Memory
    cosine: float = 0.0
    overlap: float = 0.0
    retired: str = ""
    """The name the new memory retires and this one decided ("" when none)."""
    cue: str = ""
    """The new memory's sentence that says what changed."""
    same_words: bool = False
    """One of its versions says exactly what the new memory says (case, spacing, punctuation aside)."""
    shared: list[str] = field(default_factory=list)
    """Names both mention, other than as a sentence's first word (lower case)."""
    long: bool = False
    """It or the new memory decides more than ONE_SUBJECT things (a session's summary): their subject texts
    look alike by their form, so it is never updated nor replaced (a suggestion at most); only skipped."""
    cue_cosine: float = 0.0
    """Cosine of the cue sentence alone with its subject: a long memory (a session's twenty facts) with one
    "now" in it does not replace a memory its other facts resemble."""
    vectors: Any = None
    """Its versions' subject vectors (the retired names taken out), to compare candidates."""
    phrase: str = ""
    """The new memory's sentence that sets aside, in words of its own, what this one decided (every
    word of the phrase is in its topic or decisions)."""
    other_scope: bool = False
    """It and the new memory name parts of the product (SCOPES), none in common: another subject."""
    same_values: bool = False
    """Every value the new memory states (stated_values: a number, a name) is one this one states too:
    nothing else was chosen, so a change cue ("keeps its limit of 100 ... for now") does not make it a
    replacement; at most a restatement."""

    def like(self, other: Candidate) -> float:
        """The best cosine of two candidates' versions: is one a restatement of the other?"""
        if self.vectors is None or other.vectors is None:
            return 0.0
        return float(np.max(self.vectors @ other.vectors.T))

    def evidence(self) -> dict[str, Any]:
        return {
            "topicId": self.memory.topic_id,
            "memoryId": self.memory.memory_id,
            "topic": self.memory.topic,
            "cosine": round(self.cosine, 3),
            "wordOverlap": round(self.overlap, 3),
            **({"retired": self.retired} if self.retired else {}),
            **({"cue": self.cue} if self.cue else {}),
        }


@dataclass
class Decision:
    action: Action
    target: Candidate | None = None
    reason: str = ""
    decided_by: str = "offline"
    suggestions: list[Candidate] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    llm_fallback: str = ""
    also: list[Candidate] = field(default_factory=list)
    """Further live memories a replacement supersedes (restatements of the same subject)."""
    continues: str = ""
    """An update applied late, as a replacement: the topic the new memory would have joined."""

    def reply(self) -> dict[str, Any]:
        """The `reconcile` object of the write's reply, the audit log and the decision log."""
        out: dict[str, Any] = {"decision": self.action, "decidedBy": self.decided_by, "reason": self.reason}
        if self.target is not None:
            out["topicId"] = self.target.memory.topic_id
            out["memoryId"] = self.target.memory.memory_id
            out["evidence"] = self.target.evidence()
        if self.also:
            out["alsoSuperseded"] = [c.evidence() for c in self.also]
        if self.suggestions:
            out["suggestions"] = [s.evidence() for s in self.suggestions]
        if self.llm_fallback:
            out["llmFallback"] = self.llm_fallback
        return out


def subject_text(memory: Memory) -> str:
    """What a memory is about: its topic and decisions (its context when it decided nothing). Chatter a
    captured session kept ("Store what we decided in flowbaby.") is no part of what it is about."""
    decided = [d for d in memory.decisions if not is_chatter(d)]
    return " ".join([memory.topic, *(decided or [memory.context])])


@functools.lru_cache(maxsize=4096)
def names_of(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The names a text mentions, each with the forms it is written in ("Postgres": {"PostgreSQL"}):
    a memory that says "PostgreSQL no longer stores them" retires what another calls Postgres."""
    return tuple(
        (node["name"], frozenset([node["name"], *node.get("aliases", [])]))
        for node in extract_graph(text)["nodes"]
        if node["type"] != "decision"
    )


def specific_names(text: str) -> frozenset[str]:
    """Names (lower case) a text mentions other than as the first word of its sentences: a sentence's
    capitalised first word ("Product", "Tracking") is seldom the name of a thing two subjects share."""
    firsts = {m.group(1).lower() for m in re.finditer(r"(?:^|[.;:!?]\s+)([\w.+#-]+)", text)}
    return frozenset(name.lower() for name, forms in names_of(text) if not {f.lower() for f in forms} <= firsts)


def scopes(text: str) -> frozenset[str]:
    """The SCOPES a text names."""
    return frozenset(name for name, pattern in SCOPES.items() if pattern.search(text))


def decided_count(memory: Memory) -> int:
    return sum(not is_chatter(d) for d in memory.decisions)


def normal(text: str) -> str:
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def content_words(text: str) -> frozenset[str]:
    return frozenset(light_stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _without(text: str, names: Sequence[str]) -> str:
    for name in names:
        text = re.sub(r"(?i)(?<![\w-])" + re.escape(name) + r"(?![\w-])", " ", text)
    return text


_MOVED_FROM = re.compile(
    r"(?i)\b(?:mov|migrat|switch|port)\w*\b(?:[^.;]|\.(?=\w)){0,40}?\bfrom\s+((?:[^.;]|\.(?=\w)){1,40}?)\s+(?:to|onto|into)\b"
)


def _set_aside(memory: Memory, names: Sequence[str]) -> dict[str, str]:
    """Names a decision sets aside in ways graph.search.supersession does not read: "instead of X",
    "X (is) no longer ...", and any name inside "moved from X Y to Z"."""
    found: dict[str, str] = {}
    for text in memory.decisions:
        spans = [m.group(1) for m in _MOVED_FROM.finditer(text)]
        for name in names:
            pattern = _pattern(name)
            if (
                re.search(r"(?i)\binstead of (?:the |a |an )?" + pattern, text)
                or re.search(r"(?i)" + pattern + r"\s+(?:is |are )?no longer\b", text)
                or any(re.search(r"(?i)" + pattern, span) for span in spans)
            ):
                found.setdefault(name, text)
    return found


def retired_phrases(memory: Memory) -> dict[frozenset[str], str]:
    """What a memory's decisions set aside in two or more words that are not one name (content words ->
    the sentence): a name ("instead of Docker Hub") is read as names are, by graph.search.supersession."""
    named = {normal(form) for _, forms in names_of(subject_text(memory)) for form in forms}
    found: dict[frozenset[str], str] = {}
    for text in memory.decisions:
        for pattern in _PHRASES:
            for match in pattern.finditer(text):
                words = content_words(match.group(1))
                if len(words) >= 2 and normal(match.group(1)) not in named:
                    found.setdefault(words, text)
    return found


def _holds(held: frozenset[str], words: frozenset[str]) -> bool:
    """Every word of a two-word phrase, all but one of a longer one ("the billing ORM layer")."""
    return len(words & held) >= max(2, len(words) - 1)


@functools.lru_cache(maxsize=4096)
def stated_values(text: str) -> frozenset[str]:
    """What a text chose, as it is written (lower case): numbers, and names written as names (mixed case,
    code punctuation, or capitalised inside a sentence; a sentence's first word and acronyms are left
    out, they are as often what the decision is about: "Help", "API"). A decision names what it is about
    and what was chosen; a replacement chooses something else for the same subject."""
    found = set()
    for sentence in re.split(r"(?<=[.;:!?])\s+|\n+", text):
        for index, match in enumerate(_TOKEN.finditer(sentence)):
            token = re.sub(r"'s$", "", match.group(0))
            if token.lower() in _NUMBERS:
                found.add(_NUMBERS[token.lower()])
            elif (
                any(ch.isdigit() for ch in token)
                or re.search(r"[./_=?#+]", token)
                or re.search(r"[a-z][A-Z]", token)
                or (index > 0 and token[:1].isupper() and not token.isupper())
            ):
                found.add(token.lower())
    return frozenset(found)


def _values(memory: Memory) -> frozenset[str]:
    decided = [d for d in memory.decisions if not is_chatter(d)]
    return stated_values("\n".join([memory.topic, *(decided or [memory.context])]))


def _code_values(memory: Memory) -> frozenset[str]:
    """The values a memory writes as code (".po", "encoding/json", "created_at"; not a plain number): names
    the entity extractor, which reads prose, does not give, so what retires them is read as for a name."""
    return frozenset(v for v in _values(memory) if re.search(r"[./_=?#+]", v) and not re.fullmatch(r"[\d.]+", v))


_COUNT = r"(?:\d[\d.,]*|" + "|".join(w for w, n in _NUMBERS.items() if int(n) > 1) + r")"


@functools.lru_cache(maxsize=4096)
def _counted(name: str) -> re.Pattern[str]:
    return re.compile(r"(?i)\b" + _COUNT + r"\s+" + _pattern(name) + r"(?![./]\w)")


def _names(text: str, name: str) -> bool:
    """Whether a text mentions a name as a name, not only as what a number (2 and up) counts: "moved from
    requests to httpx" retires the library, not the "100 requests per minute" of a rate limit ("one
    requests.Session" is the library)."""
    return _mentions(text, name) and _mentions(_counted(name).sub(" ", text), name)


def change_cue(memory: Memory) -> str:
    """The sentence of the new memory's topic or decisions that says something changed, or ""."""
    for text in [*memory.decisions, memory.topic]:
        if _CHANGE.search(text):
            return text
    return ""


def measure(
    new: Memory,
    live: Sequence[Memory],
    encode: Callable[[list[str]], Any],
    earlier: Callable[[Memory], Sequence[Memory]] = lambda m: (),
) -> list[Candidate]:
    """Each live memory's cosine, word overlap and replacement evidence against the new one. A topic
    is every version it had (`earlier`: a live memory's older versions): a restatement merged into
    it must not hide what the first version decided."""
    if not live:
        return []
    versions = [[*earlier(m), m] for m in live]
    forms: dict[str, set[str]] = {}
    for memory in [new, *(m for vs in versions for m in vs)]:
        for name, written in names_of(subject_text(memory)):
            forms.setdefault(name, set()).update(written)
    for memory in [new, *(m for vs in versions for m in vs)]:
        for value in _code_values(memory):
            forms.setdefault(value, {value})
    canonical = {form: name for name, written in forms.items() for form in written}
    names = sorted(canonical, key=len)
    retired = {**_set_aside(new, names), **(_retired_names(new, names[::-1]) if names else {})}
    flat = [m for vs in versions for m in vs]
    texts = [_without(subject_text(new), list(retired))] + [_without(subject_text(m), list(retired)) for m in flat]
    vectors = np.asarray(encode(texts), dtype=np.float32)
    cosine_of = dict(zip((id(m) for m in flat), (float(c) for c in vectors[1:] @ vectors[0]), strict=True))
    vector_of = dict(zip((id(m) for m in flat), vectors[1:], strict=True))
    words, said = content_words(subject_text(new)), normal(subject_text(new))
    ours, phrases = scopes(subject_text(new)), retired_phrases(new)
    cue, values = change_cue(new), _values(new)
    said_by = sorted({*retired.values(), *([cue] if cue else [])})
    cue_vectors = (
        dict(
            zip(
                said_by,
                np.asarray(encode([_without(t, list(retired)) for t in said_by]), dtype=np.float32),
                strict=True,
            )
        )
        if said_by
        else {}
    )
    out = []
    for memory, history in zip(live, versions, strict=True):
        candidate = Candidate(
            memory,
            max(cosine_of[id(m)] for m in history),
            max(_jaccard(words, content_words(subject_text(m))) for m in history),
        )
        candidate.vectors = np.stack([vector_of[id(m)] for m in history])
        theirs = scopes(" ".join(subject_text(m) for m in history))
        candidate.other_scope = bool(ours and theirs and not ours & theirs)
        candidate.long = decided_count(new) > ONE_SUBJECT or any(decided_count(m) > ONE_SUBJECT for m in history)
        candidate.same_words = any(normal(subject_text(m)) == said for m in history)
        theirs_values = frozenset().union(*(_values(m) for m in history))
        candidate.same_values = bool(values) and values <= theirs_values
        decided = " ".join(part for m in history for part in [m.topic, *m.decisions])
        for name, sentence in retired.items():
            forms_of = forms.get(canonical.get(name, name), {name})
            if any(_names(decided, form) for form in forms_of) and not _retired_names(memory, list(forms_of)):
                candidate.retired, candidate.cue = name, sentence
                break
        candidate.shared = sorted(
            specific_names(subject_text(new)) & set().union(*(specific_names(subject_text(m)) for m in history))
        )
        held = content_words(decided)
        candidate.phrase = next((said for words, said in phrases.items() if _holds(held, words)), "")
        if not candidate.cue and cue:
            candidate.cue = cue
        if candidate.cue:
            candidate.cue_cosine = float(np.max(candidate.vectors @ cue_vectors[candidate.cue]))
        out.append(candidate)
    return sorted(out, key=lambda c: -c.cosine)


def _replaced(c: Candidate) -> bool:
    """It decided a name the new memory retires and is about the same subject, or it is the same subject
    and the new memory says it changed in a sentence about that subject (tune split: 0.76-0.91)."""
    if c.long or c.other_scope:
        return False  # one sentence of a long memory retiring a name replaces nothing of another long one
    if c.phrase and c.cosine >= PHRASE_SUBJECT:
        return True
    if c.retired and (
        c.cosine >= RETIRED_SUBJECT or (c.cosine >= RETIRED_NEAR and c.cosine + c.overlap >= RETIRED_SCORE)
    ):
        return True
    return bool(c.cue) and c.cosine >= SAME_SUBJECT and c.cue_cosine >= SAME_SUBJECT and not c.same_values


def decide(new: Memory, candidates: list[Candidate]) -> Decision:
    """The offline decision among measured candidates (best cosine first)."""
    for c in candidates:
        same_words = c.same_words
        if same_words or (c.cosine >= SKIP_COSINE and c.overlap >= SKIP_OVERLAP):
            return Decision("skip", c, "the same words" if same_words else "a near-exact repeat", candidates=candidates)
    replaced = [c for c in candidates if _replaced(c)]
    if replaced:
        best = replaced[0]
        said = "the same subject, said to have changed"
        reason = (
            f"retires {best.retired}, which it decided"
            if best.retired
            else f"sets aside what it decided: {best.phrase}"
            if best.phrase and not best.cue
            else said
        )
        also = [
            c
            for c in candidates
            if c is not best
            and (
                (c in replaced or (c.retired and c.retired == best.retired and not c.other_scope))
                and c.like(best) >= ALSO_RESTATES
                or (c in replaced and c.phrase and c.phrase == best.phrase)  # both hold what it sets aside
            )
        ]
        return Decision("replace", best, reason=reason, also=also, candidates=candidates)
    top = candidates[0] if candidates and not candidates[0].other_scope else None
    if top is not None and top.cosine >= SAME_SUBJECT and not top.long:
        return Decision("update", top, "the same subject", candidates=candidates)
    if top is not None and top.cosine >= SAME_NAMED_SUBJECT and top.shared and not top.retired and not top.long:
        return Decision("update", top, f"the same subject, naming {', '.join(top.shared)}", candidates=candidates)
    weak = [c for c in candidates if c.cosine >= SUGGEST_COSINE or c.retired]
    return Decision("add", None, "no live memory on the same subject", suggestions=weak[:3], candidates=candidates)


def live_neighbours(
    new: Memory,
    vector: list[float],
    nearest: Callable[[list[float], int], list[tuple[str, float]]],
    lexical: Callable[[str, int], dict[str, float]],
    by_id: Mapping[str, Memory],
) -> list[Memory]:
    """The live memories nearest the new memory's subject: by its vector over every chunk (the best
    CANDIDATES memories), then by BM25 (the best LEXICAL_CANDIDATES more)."""
    found: dict[str, Memory] = {}

    def take(memory_ids: Iterable[str], limit: int) -> None:
        added = 0
        for memory_id in memory_ids:
            memory = by_id.get(memory_id)
            if added >= limit or memory is None or memory_id in found:
                continue
            if memory.status in LIVE and memory.topic_id != new.topic_id:
                found[memory_id] = memory
                added += 1

    take((memory_id for memory_id, _ in nearest(vector, CANDIDATES * 6)), CANDIDATES)
    take(lexical(subject_text(new), CANDIDATES), LEXICAL_CANDIDATES)
    for name in retires(new):  # what decided a name it retires may say little else like it ("npm ci in pipelines")
        take(lexical(name, CANDIDATES), LEXICAL_CANDIDATES)
    return list(found.values())


def retires(memory: Memory) -> list[str]:
    """The names a memory retires among those it mentions ("moved from npm to pnpm": npm)."""
    written = {form for _, forms in names_of(subject_text(memory)) for form in forms} | _code_values(memory)
    names = sorted(written, key=len)
    return list({**_set_aside(memory, names), **(_retired_names(memory, names[::-1]) if names else {})})
