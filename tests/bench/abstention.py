"""Abstention rates of memory retrieval: false (an answerable question abstained) and true (an
unanswerable question abstained), on the LoCoMo dev half, flowbaby's dev set (Pawpoint) and the
Dockwise abstention set (tests/bench/abstain_set.json: paraphrases with a vocabulary gap and
questions near the corpus' topics that no memory answers), each labelled set by fold (0: the dev
split the cuts were chosen on, 1: the check split, never tuned on).

Both workspaces are built offline from the engine's parts (tests/bench/devset.py's
build_offline_workspace: store, MiniLM vectors, the offline extractor's projection) and asked
in-process with every lane on and `abstain` at its default, so the count is the Retriever's own.
LoCoMo's questions of categories 1-4 all have an answer; the dev set marks its unanswerable ones.
Each abstained answer also lists its weak candidates (retrieveForAgent's `weakCandidates`): the
report says how often an abstained answerable question had its evidence among them, and how often
the answer was in the top 5 with abstention off (a withheld answer, not a miss of the ranking).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graph.core.contract import FlowbabyContextRequest
from graph.search.embedder import Embedder
from tests.bench.devset import build_offline_workspace, load_devset

ABSTAIN_SET = Path(__file__).resolve().parent / "abstain_set.json"


def _ask(retriever: Any, question: str) -> tuple[str | None, list[str]]:
    request = FlowbabyContextRequest(query=question, maxResults=10, maxTokens=100_000, includeSuperseded=True)
    found = retriever.retrieve(request)
    return found.abstained, [e.topicId for e in found.weak]


def _top5(retriever: Any, question: str) -> list[str]:
    request = FlowbabyContextRequest(
        query=question, maxResults=5, maxTokens=100_000, includeSuperseded=True, abstain=False
    )
    return [e.topicId for e in retriever.retrieve(request).entries]


def labelled_rates(retriever: Any, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """False and true abstention over questions marked `unanswerable` or not (with `answers`)."""
    answerable = [q for q in questions if q["kind"] != "unanswerable"]
    unanswerable = [q for q in questions if q["kind"] == "unanswerable"]
    false: list[dict[str, Any]] = []
    answer_in_weak = answer_in_top5 = 0
    for q in answerable:
        reason, weak = _ask(retriever, q["question"])
        if reason:
            false.append({"question": q["question"], "reason": reason})
            answer_in_weak += bool(set(weak) & set(q.get("answers", [])))
            answer_in_top5 += bool(set(_top5(retriever, q["question"])) & set(q.get("answers", [])))
    true = sum(1 for q in unanswerable if _ask(retriever, q["question"])[0])
    return {
        "answerable": len(answerable),
        "falseAbstentions": len(false),
        "falseAbstentionPct": round(100 * len(false) / max(1, len(answerable)), 2),
        "unanswerable": len(unanswerable),
        "trueAbstentions": true,
        "trueAbstentionPct": round(100 * true / max(1, len(unanswerable)), 1),
        "abstainedAnswerable": false,
        "answerAmongWeakCandidates": answer_in_weak,
        "answerInTop5WithAbstentionOff": answer_in_top5,
    }


def _by_fold(retriever: Any, questions: list[dict[str, Any]]) -> dict[str, Any]:
    report = {"all": labelled_rates(retriever, questions)}
    for fold, name in ((0, "dev"), (1, "check")):
        report[name] = labelled_rates(retriever, [q for q in questions if q.get("fold") == fold])
    return report


def run_abstention(root: Path, locomo: Path) -> dict[str, Any]:
    from graph.core.settings import default_model_path
    from tests.bench.locomo import load_conversations

    embedder = Embedder(default_model_path())
    report: dict[str, Any] = {}
    if locomo.is_file():
        asked = abstained = evidence_in_weak = 0
        examples: list[dict[str, Any]] = []
        for conversation in load_conversations(locomo):
            (root / conversation["sample"]).mkdir()
            retriever = build_offline_workspace(root / conversation["sample"], conversation["requests"], embedder)
            for q in conversation["questions"]:
                asked += 1
                reason, weak = _ask(retriever, q["question"])
                if reason:
                    abstained += 1
                    evidence_in_weak += bool(set(weak) & set(q["evidence"]))
                    examples.append({"question": q["question"], "reason": reason})
        report["locomoDev"] = {
            "answerable": asked,
            "falseAbstentions": abstained,
            "falseAbstentionPct": round(100 * abstained / max(1, asked), 2),
            "evidenceAmongWeakCandidates": evidence_in_weak,
            "abstained": examples,
        }
    else:
        report["locomoDev"] = {"skipped": f"no data at {locomo}"}
    requests, questions = load_devset()
    (root / "devset").mkdir()
    report["devset"] = _by_fold(build_offline_workspace(root / "devset", requests, embedder), questions)
    data = json.loads(ABSTAIN_SET.read_text())
    (root / "dockwise").mkdir()
    retriever = build_offline_workspace(root / "dockwise", data["memories"], embedder)
    report["dockwise"] = _by_fold(retriever, data["questions"])
    return report
