"""What a capture must not keep as a decision, and what the session already stored itself.

Sessions where the user asks the agent to remember something are full of lines that carry a
decision cue but decide nothing: requests to store ("Store what we decided in flowbaby."),
acknowledgements ("Stored the decision in flowbaby.", "Decision stored.") and talk about flowbaby
or its memory ("Let's check what flowbaby remembers about payouts."). They are told apart from real
decisions that use the same words ("We decided to store receipts in S3", "Let's keep the worker's
memory limit at 512 MB") by what the storing verb acts on: the decision itself, "this", "it", or
flowbaby/memory as the place it goes (rules written against tests/bench/chatter_set.py's labels).

A session that called `flowbaby_storeMemory` made its own memory of what it decided; its capture
leaves out the decisions that memory already holds, though worded differently (`covered`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from graph.core.memories import Memory
from graph.sessions.chunking import own_tool
from graph.sessions.model import Message

_STORE = (
    r"(?:stor(?:e|es|ed|ing)|sav(?:e|es|ed|ing)|record(?:s|ed|ing)?|remember(?:s|ed|ing)?|not(?:e|es|ed|ing)"
    r"|writ(?:e|es|ing|ten)|wrote|add(?:s|ed|ing)?|persist(?:s|ed|ing)?|log(?:s|ged|ging)?|captur(?:e|es|ed|ing))"
)
_DECISION_NOUN = r"(?:decision|decisions)"
_DECIDED = r"(?:what (?:we|you|i) (?:decided|agreed|chose)|(?:that )?(?:we|you|i) (?:decided|agreed))"
_PRONOUN = r"(?:this|that|it|these|those|everything|the first one|the last one)"
_MEMORY = r"(?:flowbaby\w*|memory|memories|storememory)"
_GAP = r"(?:[\w'-]+\s+){0,3}?"

_TALK = re.compile(r"flowbaby", re.I)
_ABOUT = re.compile(rf"\b(?:{_STORE}|memory|memories|has|holds|knows|says)\b|storememory", re.I)
_STORE_DECISION = re.compile(rf"\b{_STORE}\s+{_GAP}(?:{_DECISION_NOUN}|{_DECIDED})\b", re.I)
_DECISION_STORED = re.compile(rf"\b{_DECISION_NOUN}\s+(?:(?:is|was|has been|have been|got|now)\s+)?{_STORE}\b", re.I)
_STORE_PRONOUN = re.compile(rf"\b{_STORE}\s+{_GAP}{_PRONOUN}\b", re.I)
_PRONOUN_LAST = re.compile(
    rf"\b{_STORE}\s+{_GAP}{_PRONOUN}(?:\s+(?:down|please|too|now|first|for later|for next time))*\W*$", re.I
)
_MEMORY_WORD = re.compile(rf"\b{_MEMORY}\b", re.I)
_INTO_MEMORY = re.compile(
    rf"\b{_STORE}\b.*\b(?:in|into|to|with)\s+(?:(?:the|our|your|my|project|workspace|project's)\s+)*{_MEMORY}\b", re.I
)
_DECISION_IN_MEMORY = re.compile(rf"\b{_MEMORY}\b.*\b{_DECISION_NOUN}\b|\b{_DECISION_NOUN}\b.*\b{_MEMORY}\b", re.I)
_BARE_ACK = re.compile(rf"^\W*(?:(?:done|ok|okay|sure|yes|great|noted|got it|all)\W+)*{_STORE}\W*$", re.I)
"""An acknowledgement with nothing stored named: "Done, stored.", "Saved."."""
SHORT_WORDS = 6
"""A storing verb on "this" or "it" that ends a sentence this short is chatter ("Save that.", "Stored it."),
where "Store it in S3." is not."""


def is_chatter(sentence: str) -> bool:
    """A request to store, an acknowledgement, or talk about flowbaby or its memory: no decision."""
    if _TALK.search(sentence) and _ABOUT.search(sentence):
        return True
    if _STORE_DECISION.search(sentence) or _DECISION_STORED.search(sentence) or _INTO_MEMORY.search(sentence):
        return True
    if _DECISION_IN_MEMORY.search(sentence) or _BARE_ACK.search(sentence):
        return True
    if _STORE_PRONOUN.search(sentence):
        short = len(re.findall(r"[\w'-]+", sentence)) <= SHORT_WORDS and _PRONOUN_LAST.search(sentence)
        return bool(_MEMORY_WORD.search(sentence) or short)
    return False


@dataclass
class OwnStores:
    """The storeMemory calls a session made itself: the topics it sent and the topicIds the replies named."""

    topics: list[str] = field(default_factory=list)
    topic_ids: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.topics or self.topic_ids)


_SUMMARY_ID = re.compile(r'"(?:summary_id|topicId)"\s*:\s*"([^"\\]{1,200})"')


def own_stores(messages: Iterable[Message]) -> OwnStores:
    """The session's own `flowbaby_storeMemory` calls (as Claude Code and OpenCode write them)."""
    found = OwnStores()
    for message in messages:
        for block in message.blocks:
            if own_tool(block.tool) != "flowbaby_storeMemory":
                continue
            if block.kind == "tool_call" and block.text.strip():
                found.topics.append(block.text.strip())
            elif block.kind == "tool_result":
                found.topic_ids.extend(_reply_ids(block.text))
    return found


def _reply_ids(text: str) -> list[str]:
    try:
        reply = json.loads(text)
    except ValueError:
        return _SUMMARY_ID.findall(text)
    value = reply.get("summary_id") if isinstance(reply, dict) else None
    return [value] if isinstance(value, str) and value else _SUMMARY_ID.findall(text)


_STOP_WORDS = (
    "a an the and or but of to in on at for with by from as is are was were be been it its this that these those "
    "we i you our us let let's lets also will would should shall must can could decided decide decision agreed "
    "use using go going with not no instead than then so just please"
)
_STOP = frozenset(_STOP_WORDS.split())
COVERED_SHARE = 0.6
"""A captured decision whose content words are at least this share of a stored memory's words repeats it."""


def _words(text: str) -> set[str]:
    found = (w.strip("._+-") for w in re.findall(r"[a-z0-9][a-z0-9_.+-]*", text.casefold()))
    return {w.removesuffix("s") for w in found if len(w) > 1 and w not in _STOP}


def covered(decision: str, stored: Sequence[Memory]) -> bool:
    """Whether a memory the session stored itself already holds this decision, in other words
    (at least COVERED_SHARE of its content words, and two or more, are in that memory's summary)."""
    words = _words(decision)
    if len(words) < 2:
        return False
    for memory in stored:
        held = _words(" ".join([memory.topic, memory.context, *memory.decisions, *memory.rationale]))
        shared = len(words & held)
        if shared >= 2 and shared >= COVERED_SHARE * len(words):
            return True
    return False
