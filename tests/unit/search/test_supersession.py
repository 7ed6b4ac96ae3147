"""Implicit supersession: which (older, newer) pairs the graph's relations and retiring sentences
imply, what a false positive must not do, and how ranking uses the pairs (never hiding anything)."""

from __future__ import annotations

from graph.core.contract import FlowbabyContextRequest, MemoryStatus
from graph.core.graph_projection import STRUCTURAL_TYPES, LaneRecords
from graph.search.catalog import Catalog
from graph.search.graph_lane import GraphLane
from graph.search.retrieval import Retriever
from graph.search.supersession import NamesDict, find_pairs, is_historic
from tests.support.fakes import FakeChunkIndex, FakeEncoder, FakeGraph, FixedLaneRecords, chunk_vector, memory

JAN, JUN = "2025-01-08T10:00:00Z", "2025-06-12T10:00:00Z"
REALM = memory(
    "realm",
    topic="Mobile offline storage",
    context="The mobile app keeps offline data in Realm.",
    decisions=["Use Realm for offline storage"],
    status=MemoryStatus.DECISION_RECORD,
    created=JAN,
)
SQLITE = memory(
    "sqlite",
    topic="Offline store rewrite",
    context="Moved the mobile app's offline store from Realm to SQLite.",
    decisions=["SQLite for offline data"],
    created=JUN,
)
NAMES = {"realm": {"realm": "technology"}, "sqlite": {"realm": "technology", "sqlite": "technology"}}
RELATIONS = [("realm", "moved_to", "sqlite")]


def _by_id(*memories):  # type: ignore[no-untyped-def]
    return {m.memory_id: m for m in memories}


def test_a_stated_replacement_makes_a_pair_with_the_older_decision() -> None:
    [pair] = find_pairs(_by_id(REALM, SQLITE), RELATIONS, NAMES)
    assert (pair.older, pair.newer, pair.replaced, pair.replacement) == ("realm", "sqlite", "realm", "sqlite")


def test_a_retiring_sentence_is_evidence_too() -> None:
    older = memory("flags", topic="Feature flag service", decisions=["LaunchDarkly for flags"], created=JAN)
    newer = memory("unleash", context="We no longer use LaunchDarkly; flags moved to Unleash.", created=JUN)
    names = {"flags": {"launchdarkly": "technology"}, "unleash": {"launchdarkly": "technology"}}
    [pair] = find_pairs(_by_id(older, newer), [], names)
    assert (pair.older, pair.newer, pair.replaced, pair.replacement) == ("flags", "unleash", "launchdarkly", "")
    assert "no longer use LaunchDarkly" in pair.evidence


def test_false_positives_pair_nothing() -> None:
    # "Moved the standup" moves a meeting, not a decision; a memory that merely mentions Realm in its
    # context (not its decisions) did not decide it; a newer memory that is older in time replaces
    # nothing; "Twilio Video was replaced" does not retire the Twilio SMS decision.
    standup = memory("standup", topic="Daily standup", decisions=["Standup at 09:30"], created=JAN)
    moved = memory("moved", context="Moved the daily standup from 09:30 to 10:00.", created=JUN)
    mention = memory("mention", topic="Barn visits", context="Vets sync Realm data after barn visits.", created=JAN)
    sms = memory("sms", topic="SMS provider", decisions=["Twilio for SMS"], created=JAN)
    video = memory("video", context="Twilio Video was replaced by LiveKit after Twilio ended it.", created=JUN)
    names = {
        **NAMES,
        "mention": {"realm": "technology"},
        "sms": {"twilio": "technology"},
        "video": {"twilio": "technology", "twilio video": "technology", "livekit": "technology"},
    }
    relations = [*RELATIONS, ("twilio video", "replaced_by", "livekit")]
    pairs = find_pairs(_by_id(REALM, SQLITE, standup, moved, mention, sms, video), relations, names)
    assert [(p.older, p.newer) for p in pairs] == [("realm", "sqlite")]
    swapped = find_pairs(
        _by_id(
            memory("realm", topic="Mobile offline storage", decisions=["Use Realm"], created=JUN),
            memory("sqlite", context="Moved offline data from Realm to SQLite.", created=JAN),
        ),
        RELATIONS,
        NAMES,
    )
    assert swapped == []


def _retriever(graph: FakeGraph, cosines: dict[str, float], *memories, query: str = "invoice export") -> Retriever:  # type: ignore[no-untyped-def]
    index = FakeChunkIndex({m: [chunk_vector(c)] for m, c in cosines.items()})
    return Retriever(Catalog(memories), FakeEncoder(query), graph, lambda: index)


def test_ranking_puts_the_newer_first_and_marks_the_older_without_hiding_it() -> None:
    graph = FakeGraph(relations=RELATIONS, names=NAMES)
    # Only the older memory matches the question; the newer one is brought in right before it.
    ret = _retriever(graph, {"realm": 0.8}, REALM, SQLITE)
    ranked = ret.rank(FlowbabyContextRequest(query="invoice export"))
    assert [s.memory.memory_id for s in ranked] == ["sqlite", "realm"]
    assert ranked[1].superseded_by == "sqlite" and ranked[0].superseded_by is None
    assert ranked[0].score >= ranked[1].score
    entries, _, _, _weak = ret.retrieve(FlowbabyContextRequest(query="invoice export", maxResults=5, abstain=False))
    assert [(e.topicId, e.possiblySupersededBy, e.status) for e in entries] == [
        ("sqlite", None, MemoryStatus.ACTIVE),
        ("realm", "sqlite", MemoryStatus.DECISION_RECORD),
    ]


def test_a_question_about_the_past_keeps_the_older_first() -> None:
    assert is_historic("What did we use before SQLite?") and not is_historic("Where is offline data kept?")
    graph = FakeGraph(relations=RELATIONS, names=NAMES)
    past = "what did we use before for invoice export"
    ret = _retriever(graph, {"realm": 0.8}, REALM, SQLITE, query=past)
    ranked = ret.rank(FlowbabyContextRequest(query=past))
    assert [s.memory.memory_id for s in ranked] == ["realm"]
    assert ranked[0].superseded_by == "sqlite"


def test_a_confirmed_pair_leaves_the_list() -> None:
    graph = FakeGraph(relations=RELATIONS, names=NAMES)
    ret = _retriever(graph, {"realm": 0.8}, REALM, SQLITE)
    assert len(ret.supersession_pairs()) == 1
    ret.catalog.set_status("realm", MemoryStatus.SUPERSEDED)
    assert ret.supersession_pairs() == []
    assert ret.rank(FlowbabyContextRequest(query="invoice export")) == []  # Superseded is hidden by default


CUE_TEXTS = [
    ("Realm was dropped last year.", True),
    ("Migrated the offline store from Realm to SQLite.", True),
    ("We ſunset Realm in May.", True),  # the long s folds to "s" for the pattern, not for str.lower()
    ("Moved the standup to Monday.", False),  # a moving word, but no "from X to"
    ("Support reports for the import service.", False),
    ("The mobile app keeps offline data in Realm.", False),
]


def test_memories_without_a_retiring_or_moving_word_are_not_read_for_names(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from graph.search import supersession

    for text, cue in CUE_TEXTS:  # the gate lets through every memory _retired_names finds something in
        plain = memory("m", topic="Offline store", context=text, decisions=[text])
        found = supersession._retired_names(plain, ["realm", "Realm", "standup", "import service"])
        assert supersession._has_cue(plain) is cue and (cue or not found), text
    read: list[str] = []
    real = supersession.name_keys

    def counted(text: str) -> set[str]:
        read.append(text)
        return real(text)

    monkeypatch.setattr(supersession, "name_keys", counted)
    # Fresh copies: an earlier test confirms the module's pair, which marks REALM Superseded.
    older = memory("old", topic=REALM.topic, context=REALM.context, decisions=REALM.decisions, created=JAN)
    newer = memory("new", topic=SQLITE.topic, context=SQLITE.context, decisions=SQLITE.decisions, created=JUN)
    filler = [memory(f"f{i}", context=f"The billing service reports to team {i}.", created=JAN) for i in range(5)]
    names = {"old": NAMES["realm"], "new": NAMES["sqlite"]}
    [pair] = find_pairs(_by_id(older, newer, *filler), RELATIONS, names)
    assert (pair.older, pair.newer) == ("old", "new")
    assert len(read) == 1 and "from Realm to SQLite" in read[0]  # the one memory that moved something


def test_the_lanes_names_read_on_demand_are_what_every_memorys_dict_gave() -> None:
    """The graph lane answers names_of and the holders of a name from its indexes: the same dicts, the
    same holders in the same order, and so the same pairs as the fully built dicts (the old way)."""
    entities = [
        ("e_realm", "Realm", "technology", ("realm", "sqlite", "standup")),
        ("e_realm2", "Realm", "component", ("sqlite", "video")),  # one name, two entities
        ("e_sqlite", "SQLite", "technology", ("sqlite",)),
        ("e_topic", "Offline store rewrite", "topic", ("sqlite",)),  # structural: no name of a memory
        ("e_ghost", "Ghost", "technology", ("realm",)),  # its holder does not list it: held by no one
    ]
    memory_entities = {
        "realm": ("e_realm",),
        "sqlite": ("e_realm", "e_realm2", "e_sqlite", "e_topic"),
        "standup": ("e_realm",),
        "video": ("e_realm2",),
    }
    lane = GraphLane(FixedLaneRecords(LaneRecords(entities, [("e_realm", "e_sqlite", "moved_to")], memory_entities)))  # type: ignore[arg-type]
    lane.refresh()
    _, relations, names_of = lane.supersession_inputs()
    kinds = {e: (name, kind) for e, name, kind, _ in entities}
    built = {
        m: {kinds[e][0]: kinds[e][1] for e in held if kinds[e][1] not in STRUCTURAL_TYPES}
        for m, held in memory_entities.items()
    }
    assert dict(names_of) == built and list(names_of) == list(built)
    everything = {"Realm", "SQLite", "Offline store rewrite", "Ghost", "Nothing"}
    assert names_of.holders(everything) == NamesDict(built).holders(everything)
    assert names_of.holders({"Realm"}) == {"Realm": ["realm", "sqlite", "standup", "video"]}
    by_id = _by_id(
        REALM,
        SQLITE,
        memory("standup", topic="Standup", context="Realm came up.", created=JAN),
        memory("video", topic="Video", context="Realm sync for video.", decisions=["Realm for video"], created=JAN),
    )
    pairs = find_pairs(by_id, relations, names_of)
    assert pairs and pairs == find_pairs(by_id, relations, built)
