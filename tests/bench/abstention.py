"""Abstention rates of memory retrieval: false (an answerable question abstained) and true (an
unanswerable question abstained), on the LoCoMo dev half and flowbaby's dev set.

Both workspaces are built offline from the engine's parts (tests/bench/devset.py's
build_offline_workspace: store, MiniLM vectors, the offline extractor's projection) and asked
in-process with every lane on and `abstain` at its default, so the count is the Retriever's own.
LoCoMo's questions of categories 1-4 all have an answer; the dev set marks its unanswerable ones.
Each abstained answer also lists its weak candidates (retrieveForAgent's `weakCandidates`): the
report says how often an abstained answerable question had its evidence among them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graph.core.contract import FlowbabyContextRequest
from graph.search.embedder import Embedder
from tests.bench.devset import build_offline_workspace, load_devset


def _ask(retriever: Any, question: str) -> tuple[str | None, list[str]]:
    request = FlowbabyContextRequest(query=question, maxResults=10, maxTokens=100_000, includeSuperseded=True)
    found = retriever.retrieve(request)
    return found.abstained, [e.topicId for e in found.weak]


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
    retriever = build_offline_workspace(root / "devset", requests, embedder)
    answerable = [q for q in questions if q["kind"] != "unanswerable"]
    unanswerable = [q for q in questions if q["kind"] == "unanswerable"]
    false: list[str] = []
    answer_in_weak = 0
    for q in answerable:
        reason, weak = _ask(retriever, q["question"])
        if reason:
            false.append(q["question"])
            answer_in_weak += bool(set(weak) & set(q.get("answers", [])))
    true = sum(1 for q in unanswerable if _ask(retriever, q["question"])[0])
    report["devset"] = {
        "answerable": len(answerable),
        "falseAbstentions": len(false),
        "falseAbstentionPct": round(100 * len(false) / max(1, len(answerable)), 2),
        "unanswerable": len(unanswerable),
        "trueAbstentionPct": round(100 * true / max(1, len(unanswerable)), 1),
        "abstainedAnswerable": false,
        "answerAmongWeakCandidates": answer_in_weak,
    }
    return report
