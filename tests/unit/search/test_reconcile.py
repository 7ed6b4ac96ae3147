"""Reconcile on write (issue 50): the offline decision, the LLM's choice and its fallback, the decision
log, and restore, with in-process fakes (a hashed bag-of-words encoder, a dict store)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from graph.backends.embedded.decision_log import FileDecisionLog as DecisionLog
from graph.core.contract import FlowbabyError, FlowbabyIngestRequest, MemoryStatus
from graph.core.memories import Memory
from graph.core.settings import LLMSettings
from graph.search.reconcile import (
    PHRASE_SUBJECT,
    RETIRED_SUBJECT,
    SAME_NAMED_SUBJECT,
    SAME_SUBJECT,
    Candidate,
    decide,
    measure,
    retired_phrases,
    retires,
    scopes,
)
from graph.search.reconcile_llm import ask, parse
from graph.search.reconciler import Reconciler, audit_decision
from graph.search.retrieval import Retriever
from tests.support.fakes import HashEncoder, memory

ENCODE = HashEncoder().encode
NEW = memory("new", topic="Log storage", decisions=["Moved log storage from Elasticsearch to Grafana Loki"])


def _candidate(m: Memory, cosine: float, **fields: object) -> Candidate:
    c = Candidate(m, cosine)
    for name, value in fields.items():
        setattr(c, name, value)
    return c


def test_the_same_words_are_skipped_and_a_near_exact_repeat_too() -> None:
    old = memory("old", topic="Help width", decisions=["Cap the help text at 80 columns"])
    new = memory("n", topic="help width", decisions=["Cap the help text at 80 columns."])
    found = measure(new, [old], ENCODE)
    assert found[0].same_words
    assert decide(new, found).action == "skip"
    assert decide(new, [_candidate(old, 0.98, overlap=0.9)]).action == "skip"
    assert decide(new, [_candidate(old, 0.98, overlap=0.5)]).action != "skip"


def test_a_replacement_supersedes_the_holder_of_the_retired_name_on_its_subject_only() -> None:
    logs = memory("logs", topic="Log storage", decisions=["Ship application log storage to Elasticsearch"])
    index = memory("index", topic="Search index", decisions=["The product search index stays in Elasticsearch"])
    found = {c.memory.memory_id: c for c in measure(NEW, [logs, index], ENCODE)}
    assert found["logs"].retired == found["index"].retired == "Elasticsearch"
    assert found["logs"].cosine >= RETIRED_SUBJECT > found["index"].cosine
    decision = decide(NEW, sorted(found.values(), key=lambda c: -c.cosine))
    assert decision.action == "replace" and decision.target is not None
    assert decision.target.memory.memory_id == "logs" and not decision.also
    assert decision.reply()["evidence"]["retired"] == "Elasticsearch"


def test_weak_evidence_is_left_as_a_suggestion() -> None:
    index = memory("index", topic="Search index", decisions=["The search index stays in Elasticsearch"])
    decision = decide(NEW, [_candidate(index, RETIRED_SUBJECT - 0.1, retired="Elasticsearch", cue="moved")])
    assert decision.action == "add" and decision.target is None
    assert [s["topicId"] for s in decision.reply()["suggestions"]] == ["index"]


def test_the_same_subject_is_an_update_or_with_a_change_cue_a_replacement() -> None:
    old = memory("old", topic="Help width", decisions=["Cap the help text at 80 columns"])
    assert decide(NEW, [_candidate(old, SAME_SUBJECT + 0.01)]).action == "update"
    said = {"cue": "now 100 columns", "cue_cosine": SAME_SUBJECT + 0.01}
    assert decide(NEW, [_candidate(old, SAME_SUBJECT + 0.01, **said)]).action == "replace"
    assert decide(NEW, [_candidate(old, SAME_SUBJECT - 0.01)]).action == "add"
    # The cue sentence about something else (one fact of many), or a memory of many decisions: no change.
    aside = {**said, "cue_cosine": SAME_SUBJECT - 0.1}
    assert decide(NEW, [_candidate(old, SAME_SUBJECT + 0.01, **aside)]).action == "update"
    assert decide(NEW, [_candidate(old, SAME_SUBJECT + 0.1, long=True)]).action == "add"
    assert decide(NEW, [_candidate(old, SAME_SUBJECT + 0.1, long=True, **said)]).action == "add"
    assert decide(NEW, [_candidate(old, RETIRED_SUBJECT + 0.2, long=True, retired="Elasticsearch")]).action == "add"


def test_a_change_cue_that_chooses_nothing_new_is_a_restatement_not_a_replacement() -> None:
    """Subject and value: a replacement chooses another value for the same subject. A captured session that
    says the limit stays 100 "for now" (a change cue) chose nothing the memory had not (tune: rate-limit's
    session replaced the first memory, and the real raise to 600 then found nothing to replace)."""
    old = memory("old", topic="API rate limit", decisions=["The public API is limited to 100 requests per minute"])
    kept = memory(
        "kept", topic="Rate limit", decisions=["The public API keeps its limit of 100 requests per minute for now"]
    )
    raised = memory("raised", topic="Rate limit", decisions=["The public API limit is now 600 requests per minute"])
    ttl = memory("ttl", topic="Page cache", decisions=["Product pages are cached for 5 minutes"])
    five = memory("five", topic="Page cache", decisions=["Product pages stay cached for five minutes for now"])
    cue = {"cue": "for now", "cue_cosine": SAME_SUBJECT + 0.1}
    same, other = measure(kept, [old], ENCODE)[0], measure(raised, [old], ENCODE)[0]
    assert same.same_values and not other.same_values
    assert measure(five, [ttl], ENCODE)[0].same_values  # "five" is the 5 the memory states
    assert decide(kept, [_candidate(old, SAME_SUBJECT + 0.1, same_values=True, **cue)]).action == "update"
    assert decide(raised, [_candidate(old, SAME_SUBJECT + 0.1, same_values=False, **cue)]).action == "replace"
    # a memory that states no value at all ("we now use UTC") is not held back by this rule
    utc = memory("utc", topic="Timestamps", decisions=["All timestamps are now stored in UTC"])
    assert not measure(utc, [old], ENCODE)[0].same_values


def test_a_value_written_as_code_is_retired_as_a_name_is() -> None:
    """The entity extractor reads prose: ".po" is no name to it, so "moved from gettext .po files to Fluent"
    retired the phrase, and the memory that only says ".po catalogs" stayed current (tune: translations)."""
    new = memory("new", topic="Fluent", decisions=["UI translations moved from gettext .po files to Fluent .ftl files"])
    po = memory("po", topic="Localization files", decisions=["Translators edit the .po catalogs with Poedit"])
    django = memory("django", topic="Django admin i18n", decisions=["The Django admin keeps its gettext translations"])
    found = {c.memory.memory_id: c for c in measure(new, [po, django], ENCODE)}
    assert found["po"].retired == ".po" and found["django"].retired == ""
    assert ".po" in retires(new)


def test_a_name_only_counted_by_a_number_is_not_held() -> None:
    """ "Switched from requests to httpx" retires the library; a rate limit of "100 requests per minute"
    holds no library (tune: http-client's replacement superseded rate-limit's memories with its
    restatement)."""
    new = memory("new", topic="httpx", decisions=["Switched outbound HTTP in the services from requests to httpx"])
    limit = memory("limit", topic="API rate limit", decisions=["The public API allows 100 requests per minute"])
    client = memory("client", topic="Partner API client", decisions=["Partner calls go through one requests.Session"])
    found = {c.memory.memory_id: c for c in measure(new, [limit, client], ENCODE)}
    assert found["client"].retired == "requests" and found["limit"].retired == ""


def test_memories_for_different_parts_of_the_product_are_never_merged_nor_replaced() -> None:
    """The docs' line length is another subject than the CLI's help width, however alike the words."""
    cli = memory("cli", topic="CLI help formatting", decisions=["Help output wraps at 80 characters"])
    docs = memory("docs", topic="Docs line length", decisions=["Markdown documentation is hard-wrapped at 80 columns"])
    assert scopes("CLI help formatting") == {"cli"} and scopes("Markdown documentation") == {"docs"}
    found = measure(docs, [cli], ENCODE)[0]
    assert found.other_scope
    strong = {"other_scope": True, "retired": "80", "cue": "now 100", "cue_cosine": 0.9}
    decision = decide(docs, [_candidate(cli, SAME_SUBJECT + 0.2, **strong)])
    assert decision.action == "add" and [s["topicId"] for s in decision.reply()["suggestions"]] == ["cli"]
    # the same part named, or only one of them naming a part: compared as before
    help_text = memory("help", topic="Help text", decisions=["Help text wraps at 80 columns"])
    assert not measure(help_text, [cli], ENCODE)[0].other_scope
    assert decide(help_text, [_candidate(cli, SAME_SUBJECT + 0.01)]).action == "update"


def test_a_shared_name_makes_an_update_only_when_the_texts_are_close() -> None:
    """Sentry performance traces beside Sentry error reports share a name and words (0.55-0.62 on the
    tune split); restatements taken by the shared name are closer."""
    errors = memory("errors", topic="Error tracking", decisions=["Unhandled exceptions are reported to Sentry"])
    traces = memory("traces", topic="API tracing", decisions=["Performance traces of the API are sent to Sentry"])
    named = {"shared": ["sentry"]}
    assert decide(traces, [_candidate(errors, 0.6, **named)]).action == "add"
    assert decide(traces, [_candidate(errors, SAME_NAMED_SUBJECT + 0.01, **named)]).action == "update"


def test_what_a_replacement_sets_aside_in_words_of_its_own_finds_the_memories_that_decided_it() -> None:
    """ "The develop branch is retired" replaces the git-flow memory and its restatement, which hold both
    words, and not the release-branch look-alike; a name alone ("instead of Docker Hub") is no phrase."""
    new = memory("n", topic="Branching", decisions=["We use trunk-based development; the develop branch is retired"])
    flow = memory("flow", topic="Branching model", decisions=["We use git flow with develop and release branches"])
    again = memory("again", topic="Branching", decisions=["We use develop for features, release branches for releases"])
    look = memory("look", topic="App store releases", decisions=["Release branches are cut for each app submission"])
    assert list(retired_phrases(new)) == [frozenset({"develop", "branch"})]
    found = {c.memory.memory_id: c for c in measure(new, [flow, again, look], ENCODE)}
    assert found["flow"].phrase and found["again"].phrase and not found["look"].phrase
    assert min(found["flow"].cosine, found["again"].cosine) >= PHRASE_SUBJECT
    decision = decide(new, sorted(found.values(), key=lambda c: -c.cosine))
    assert decision.action == "replace" and decision.target is not None
    assert {decision.target.memory.memory_id, *(c.memory.memory_id for c in decision.also)} == {"flow", "again"}
    assert decide(new, [_candidate(look, 0.9, other_scope=True, phrase=new.decisions[0])]).action == "add"
    assert not retired_phrases(memory("hub", decisions=["Images go to GHCR instead of Docker Hub"]))
    billing = memory("b", decisions=["Replaced the billing ORM layer with hand-written SQL"])
    orm = memory("orm", topic="ORM", decisions=["The billing service uses SQLAlchemy ORM models"])
    assert measure(billing, [orm], ENCODE)[0].phrase  # all but one word of a longer phrase


def test_a_topic_is_compared_through_its_earlier_versions() -> None:
    first = memory("v1", topic_id="t", decisions=["Ship application log storage to Elasticsearch"])
    second = memory("v2", topic_id="t", version=2, topic="Logs", decisions=["Kibana dashboards for the team"])
    alone = measure(NEW, [second], ENCODE)[0]
    with_history = measure(NEW, [second], ENCODE, lambda m: [first])[0]
    assert not alone.retired and with_history.retired == "Elasticsearch"
    assert with_history.cosine > alone.cosine


def test_the_llm_choice_is_parsed_strictly() -> None:
    c = [_candidate(memory("a"), 0.7)]
    assert parse('{"decision": "replace", "candidate": 1, "reason": "moved"}', c)[:2] == ("replace", c[0])
    assert parse('```json\n{"decision": "add", "candidate": null}\n```', c)[:2] == ("add", None)
    for bad in ('{"decision": "merge"}', '{"decision": "skip", "candidate": 2}', "not json", '{"decision": "skip"}'):
        with pytest.raises(ValueError):
            parse(bad, c)


def test_the_llm_decides_with_the_same_evidence_and_any_failure_keeps_the_offline_decision() -> None:
    old = memory("old", topic="Log storage", decisions=["Ship application log storage to Elasticsearch"])
    offline = decide(NEW, measure(NEW, [old], ENCODE))
    llm = LLMSettings(provider="openai", model="gpt-4o-mini", api_key="k")
    chosen = ask(NEW, offline, llm, lambda *a: '{"decision": "update", "candidate": 1, "reason": "same"}')
    assert (chosen.action, chosen.decided_by, chosen.reason) == ("update", "llm", "same")
    assert chosen.reply()["evidence"] == offline.reply()["evidence"]

    def broken(*args: object) -> str:
        raise TimeoutError("no answer in 8s")

    kept = ask(NEW, offline, llm, broken)
    assert kept is offline and kept.decided_by == "offline" and "TimeoutError" in kept.llm_fallback


class DictStore:
    def __init__(self, *memories: Memory) -> None:
        self.by_id = {m.memory_id: m for m in memories}

    def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        return [self.by_id[m] for m in memory_ids if m in self.by_id]

    def set_status(self, memory_id: str, status: MemoryStatus) -> None:
        self.by_id[memory_id].status = status


def test_apply_logs_the_decision_and_restore_gives_the_status_back_once(tmp_path: Path) -> None:
    old = memory("old", topic="Log storage", decisions=["Ship application log storage to Elasticsearch"])
    new = memory("new-id", topic_id="new", topic=NEW.topic, decisions=NEW.decisions)
    store = DictStore(old, new)
    reconciler = Reconciler(DecisionLog(tmp_path / "reconcile.jsonl"), LLMSettings(), lambda t: [])
    decision = decide(NEW, measure(NEW, [old], ENCODE))
    reply = reconciler.apply(decision, new, store, None)
    assert reply["decision"] == "replace" and old.status is MemoryStatus.SUPERSEDED
    assert audit_decision(reply) == {"decision": "replace", "decidedBy": "offline", "topicId": "old", "id": reply["id"]}
    logged = reconciler.log.for_topic("old")
    assert [e.id for e in logged] == [reply["id"]] and logged[0].superseded[0].status == "Active"

    undone = reconciler.restore("old", store, None)
    assert undone["restored"] == [{"topicId": "old", "memoryId": "old", "status": "Active"}]
    assert store.by_id["old"].status.value == "Active" and reconciler.log.for_topic("old")[0].restoredAt
    with pytest.raises(FlowbabyError) as error:
        reconciler.restore("old", store, None)
    assert error.value.code.value == "NOT_FOUND"


def test_a_damaged_forged_or_foreign_log_line_is_skipped_and_restore_touches_only_held_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBABY_SEAL_KEY", str(tmp_path / "data" / "seal.key"))
    path = tmp_path / "ws" / ".flowbaby" / "reconcile.jsonl"
    log = DecisionLog(path, tmp_path / "ws")
    foreign = {
        "decision": "replace",
        "decidedBy": "offline",
        "newer": {"topicId": "x", "memoryId": "x"},
        "superseded": [
            {"topicId": "t", "memoryId": "not-here", "status": "Active"},
            {"topicId": "t", "memoryId": "held", "status": "Bogus"},
        ],
    }
    written = log.add(foreign)
    forged = {**foreign, "id": "rc_forged", "at": "2026-01-01T00:00:00.000Z"}
    forged["superseded"] = [{"topicId": "t", "memoryId": "held", "status": "Active"}]
    elsewhere = DecisionLog(tmp_path / "other" / "reconcile.jsonl", tmp_path / "other")
    moved = elsewhere.add({**foreign, "superseded": forged["superseded"]})  # sealed, but for another folder
    copied = (tmp_path / "other" / "reconcile.jsonl").read_text()
    with open(path, "a") as lines:  # as a cloned repository's file, or a line copied from another workspace
        lines.write("not json\n" + json.dumps({"id": 5}) + "\n" + json.dumps(forged) + "\n" + copied)
    reconciler = Reconciler(DecisionLog(path, tmp_path / "ws"), LLMSettings(), lambda t: [])
    assert list(reconciler.log.entries()) == [written.id] and moved.id != written.id
    held = memory("held", topic_id="t", status=MemoryStatus.SUPERSEDED)
    assert reconciler.restore("t", DictStore(held), None)["restored"] == []
    assert held.status is MemoryStatus.SUPERSEDED


def test_an_update_joins_the_topic_a_skip_is_stored_superseded_and_a_capture_keeps_its_topic() -> None:
    old = memory("old", topic="Help width", decisions=["Cap the help text width at 80 columns"])
    retriever = SimpleNamespace(
        embedder=HashEncoder(),
        catalog=SimpleNamespace(by_id={"old": old}, lexical=SimpleNamespace(search=lambda text, limit: {"old": 1.0})),
    )
    index = SimpleNamespace(search=lambda vector, limit: [("old", 0.9)])
    fields = FlowbabyIngestRequest.model_validate(
        {
            "topic": "Help width",
            "context": "CLI.",
            "decisions": ["Cap the help text width at 80 columns on wide terminals"],
        }
    )
    meta = fields.metadata.model_dump(mode="json")
    reconciler = Reconciler(DecisionLog(Path("/nonexistent/reconcile.jsonl")), LLMSettings(), lambda t: [])
    update = reconciler.decide(fields, meta, cast(Retriever, retriever), index, capture=False)
    assert update.action == "update"
    assert Reconciler.staged_meta(meta, update)["topicId"] == "old"
    kept = reconciler.decide(fields, meta, cast(Retriever, retriever), index, capture=True)
    assert kept.action == "add" and [s.memory.memory_id for s in kept.suggestions] == ["old"]
    assert Reconciler.staged_meta(meta, kept) == meta
    skip = decide(NEW, [_candidate(old, 0.99, overlap=0.95)])
    assert Reconciler.staged_meta(meta, skip)["status"] == "Superseded"


def test_a_decision_after_the_reply_supersedes_the_staged_repeat_and_turns_an_update_into_a_replacement(
    tmp_path: Path,
) -> None:
    old = memory("old", topic="Help width", decisions=["Cap the help text width at 80 columns"])
    repeat = memory("repeat", topic="Help width", decisions=["Cap the help text width at 80 columns."])
    restated = memory("restated", topic="Help width", decisions=["Help wraps at 80 columns"])
    store = DictStore(old, repeat, restated)
    reconciler = Reconciler(DecisionLog(tmp_path / "reconcile.jsonl"), LLMSettings(), lambda t: [])

    late: list[dict[str, Any]] = []

    async def run() -> None:
        for staged, decision in (
            (repeat, decide(NEW, [_candidate(old, 0.99, overlap=0.95)])),
            (restated, decide(NEW, [_candidate(old, SAME_SUBJECT + 0.05)])),
        ):
            turn = reconciler.begin(lambda since, decision=decision: decision)
            reconciler.apply_later(turn, staged, store, None, late.append)
        await reconciler.settled()

    asyncio.run(run())
    assert store.by_id["repeat"].status is MemoryStatus.SUPERSEDED
    assert store.by_id["old"].status is MemoryStatus.SUPERSEDED and store.by_id["restated"].topic_id == "restated"
    assert [e.decision for e in reconciler.log.entries().values()] == ["skip", "replace"]
    assert [r["decision"] for r in late] == ["skip", "replace"]  # each reaches the audit log on its own line
    assert reconciler.log.continued("restated") == ["old"]  # the update it was: old's versions count as restated's
