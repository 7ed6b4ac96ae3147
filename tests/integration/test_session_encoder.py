"""The session encoder on the real MiniLM: the int8 graph is derived locally and used, every
vector stays within cosine 0.99 of the fp32 graph's, short texts are exactly the fp32 vectors,
and a fact said once is still the best hit among session-like chunks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graph.core.settings import default_model_path
from graph.search.embedder import Embedder
from graph.sessions.encoder import MIN_COSINE, PROBES, SHORT_TOKENS, SessionEncoder, derived

pytestmark = pytest.mark.slow

CHUNKS = [
    "The payments webhook retries were capped at 7 because the Stripe sandbox throttles at 8 per minute.",
    "[tool bash] pytest -q tests/unit\n[result bash] 212 passed, 3 skipped in 41.20s",
    "Let me look at the deploy script first; the staging job failed on the migration step again.",
    '[result bash] Traceback (most recent call last):\n  File "worker.py", line 88, in run\nTimeoutError: queue',
    "Thanks, that fixed it!",
    "I renamed the ledger module and updated every import; the type checker is clean now.",
]


@pytest.fixture(scope="module")
def encoders() -> tuple[Embedder, SessionEncoder]:
    fp32 = Embedder(default_model_path())
    return fp32, SessionEncoder(fp32)


def test_the_int8_graph_is_derived_and_close_to_fp32(encoders: tuple[Embedder, SessionEncoder]) -> None:
    fp32, session = encoders
    path, meta = derived(fp32.model_path)
    assert path.name == "session-int8.onnx" and path.is_file() and float(str(meta["min_probe_cosine"])) >= MIN_COSINE
    assert json.loads((path.parent / "meta.json").read_text())["dimensions"] == 384
    texts = PROBES + CHUNKS
    ref, got = np.asarray(fp32.encode(texts)), np.asarray(session.encode(texts))
    cosines = (ref * got).sum(axis=1)
    assert cosines.min() >= MIN_COSINE
    short = [i for i, t in enumerate(texts) if fp32.tokenizer.count_tokens(t) + 2 <= SHORT_TOKENS]
    long = [i for i in range(len(texts)) if i not in short]
    assert short and long and np.allclose(got[short], ref[short], atol=1e-6)  # short texts: the fp32 graph
    assert not np.allclose(got[long], ref[long], atol=1e-4)  # long ones: the int8 graph really runs
    assert session.variant.endswith(f"session-int8.onnx@{meta['derive_version']}:short{SHORT_TOKENS}")


def test_a_fact_said_once_is_the_best_hit(encoders: tuple[Embedder, SessionEncoder]) -> None:
    _, session = encoders
    chunks = np.asarray(session.encode(CHUNKS))
    query = np.asarray(session.encode(["why are webhook retries capped"])[0])
    assert int(np.argmax(chunks @ query)) == 0
