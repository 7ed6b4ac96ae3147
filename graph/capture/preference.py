"""Which of the person's sentences state their own way of working: the preferences a capture may propose as
*user* memories (issue 49), when the person turned that on (FLOWBABY_CAPTURE_USER_PREFERENCES=1).

A preference is true in every project the person works in: "I always use uv, never pip", "I prefer pytest
fixtures over setUp", "Commit messages in the imperative, please", "Always ask me before you push". What a
project decided stays the project's, though it says always or prefer: "We never deploy on Fridays", "This
repository uses pnpm", "Never log card numbers", "I decided the cache TTL is 300 seconds". Nor is talk a
preference: "I always forget how this flag works", "I never got that error before", questions.

The rules, in order: only the user's own sentences; a question, a project anchor (we, our, let's, this
repository...), a decision made ("I decided"), a moment ("right now", "today") or an experience after the
adverb ("I always forget", "I never liked") rule a sentence out; then one cue must hold: the person's habit
("I always/usually/never <verb>", "I prefer", "I tend to", "my rule is"), an instruction about working with
them ("always ask me", "never ... for me"), or a style rule on a working-habit noun ("commit messages in the
imperative"). Written against tests/bench/preference_set.py's SENTENCES; HELD_OUT was not used to tune them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from graph.core.redaction import clean
from graph.core.sentences import sentences
from graph.sessions.model import Block, Message

MAX_CHARS = 300
"""A longer sentence is a paragraph of reasoning, not a preference stated."""

_PROJECT = re.compile(
    r"\b(?:we|we'(?:re|ll|ve|d)|our|ours|us|let'?s|let us|the team|here|(?:this|the|our) "
    r"(?:project|repo|repository|codebase|service|module|app|package|team|file|function|class|api))\b",
    re.I,
)
_DECIDED = re.compile(r"\bi (?:decided|chose|agreed|picked|settled)\b", re.I)
_MOMENT = re.compile(r"\b(?:right now|today|yesterday|tonight|this time|at the moment|for now|just now)\b", re.I)
_ADVERB = r"(?:always|never|usually|generally|normally|typically|mostly|only|often|rarely)"
_EXPERIENCE = re.compile(
    rf"\bi(?:'m| am)? {_ADVERB} (?:forget|forgot|think|thought|get|got|see|saw|seen|wonder|wondered|hear|heard"
    r"|know|knew|find|found|notice|noticed|hit|struggle|mix|confuse|have|had|was|were|did|liked|loved|hated|used"
    r"|end up|run into)\b",
    re.I,
)
_HABIT = re.compile(
    rf"\bi {_ADVERB} (?!forget|forgot|think|thought)\w+"
    r"|\bi(?:'d| would)? (?:prefer|rather)\b|\bi (?:tend to|like to|like my|hate|dislike|can't stand|don't like"
    r"|do not like)\b"
    r"|\bi like (?!this|that|it|the|what|how|your)\w+"
    r"|\bi use (?!this|that|it\b|the\b)\w+"
    r"|\bi want (?:\w+ ){0,3}(?:on every|in every|everywhere|in all)\b"
    r"|\bmy (?:preference|rule|habit|style|convention|default|workflow)\b"
    r"|\bmy [\w -]{1,30} (?:are|is) (?:always|never)\b"
    r"|\b(?:in|for|across) (?:all|every one of) my (?:projects|repos|repositories|code)\b"
    r"|\bfor every project\b",
    re.I,
)
_ME = r"(?:me|my|mine|i)"
_INSTRUCTION = re.compile(
    rf"^(?:please,? |and |from now on,? |also,? )*(?:always|never|don't ever|do not ever|don't|do not) \w+.*\b{_ME}\b"
    r"|^(?:please,? )?(?:from now on,? )(?:always|never) (?:explain|ask|answer|reply|respond|show|summari[sz]e|suggest"
    r"|tell|confirm|draft|write)\b"
    r"|^(?:please,? )?(?:write|answer|reply|respond|draft|speak)\b.*\b(?:everything|always|every|all)\b.*\bme\b",
    re.I,
)
_STYLE = re.compile(
    r"^(?:commit messages|commit titles|branch names|pr titles|pull request titles|docstrings|comments|indentation"
    r"|tabs|spaces|line length|variable names|test names)\b[^.]{0,60}\b(?:in|as|with|under|over|should|must|always"
    r"|never|only|not)\b",
    re.I,
)


def is_preference(sentence: str) -> bool:
    """The person's own way of working, true in any project (see the module's rules)."""
    text = " ".join(sentence.split()).replace("\u2019", "'")
    if not text or len(text) > MAX_CHARS or text.endswith("?"):
        return False
    if _PROJECT.search(text) or _DECIDED.search(text) or _EXPERIENCE.search(text):
        return False
    if _MOMENT.search(re.sub(r"\bfrom now on\b", "", text, flags=re.I)):
        return False
    return bool(_HABIT.search(text) or _INSTRUCTION.search(text) or _STYLE.search(text))


def split_preferences(messages: Iterable[Message]) -> tuple[list[str], list[Message]]:
    """(the preferences the user stated in these turns, in order, each once; the turns without them). The
    project's capture then never quotes one in its topic, context or decisions, where it would read as the
    project's own decision and override the person's (docs/contract/21-user-scope.md); an agent's "I always
    use uv too" is left out of it as well, and is not the person's preference."""
    found: dict[str, str] = {}
    kept: list[Message] = []
    for message in messages:
        if message.role not in ("user", "assistant"):
            kept.append(message)
            continue
        blocks = []
        for block in message.blocks:
            said, rest = without_preferences(block.text) if block.kind == "text" else ([], "")
            if not said:
                blocks.append(block)
                continue
            if message.role == "user":
                for preference in said:
                    found.setdefault(preference.casefold(), preference)
            blocks.append(Block(block.kind, rest, block.tool))
        kept.append(replace(message, blocks=blocks))
    return list(found.values()), kept


def without_preferences(text: str) -> tuple[list[str], str]:
    """(the preferences a text states, read as a capture reads it: `<private>` spans and secrets gone; the
    cleaned text without them). ([], the text as given) when it states none."""
    said: list[str] = []
    lines = []
    for line in clean(text)[0].splitlines():
        rest: list[str] = []
        for sentence in sentences(line):
            piece = " ".join(sentence.split())
            (said if is_preference(piece) else rest).append(piece)
        lines.append(" ".join(rest))
    return (said, "\n".join(lines)) if said else ([], text)
