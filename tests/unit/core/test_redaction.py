"""graph.core.redaction on a corpus of fake secrets and of strings that only look like them
(tests/support/fixtures/redaction_corpus.json): every secret is replaced, and no look-alike
(hashes, UUIDs, base64 images, commit ids, identifiers, paths, flags, prose) is touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graph.core.redaction import MARK, redact

CORPUS: dict[str, Any] = json.loads(
    (Path(__file__).parents[2] / "support" / "fixtures" / "redaction_corpus.json").read_text()
)
MAX_LOOKALIKES_TOUCHED = 0


def _text(parts: list[str]) -> str:
    return "".join(parts)


def test_the_corpus_is_big_enough() -> None:
    assert len(CORPUS["secrets"]) >= 60 and len(CORPUS["lookalikes"]) >= 60


@pytest.mark.parametrize("case", CORPUS["secrets"], ids=[case["name"] for case in CORPUS["secrets"]])
def test_every_secret_is_redacted(case: dict[str, Any]) -> None:
    cleaned, count = redact(_text(case["text"]))
    secret = _text(case["secret"])
    assert count >= 1 and MARK in cleaned, cleaned
    assert secret not in cleaned, cleaned
    # Nor a long piece of it (a match that stopped early would leave the rest).
    assert not any(secret[i : i + 12] in cleaned for i in range(0, max(1, len(secret) - 11))), cleaned
    for kept in case["keep"]:
        assert kept in cleaned, cleaned
    assert redact(cleaned) == (cleaned, 0)  # redacting twice changes nothing more


def test_lookalikes_are_left_alone() -> None:
    touched = [case["name"] for case in CORPUS["lookalikes"] if redact(_text([case["text"]]))[1]]
    print(f"look-alikes touched: {len(touched)} of {len(CORPUS['lookalikes'])}: {touched}")
    assert len(touched) <= MAX_LOOKALIKES_TOUCHED, touched


def test_only_the_password_of_a_database_url_goes() -> None:
    cleaned, count = redact("connecting to postgres://app:Zq8-Lw3vT_p1x@db.internal:5432/orders now")
    assert (cleaned, count) == (f"connecting to postgres://app:{MARK}@db.internal:5432/orders now", 1)


def test_a_dotenv_file_keeps_its_names_and_harmless_values() -> None:
    env = "DEBUG=true\nPORT=8080\nDB_PASSWORD=Zq8Lw3vTp1x\nAPI_TOKEN='k9Fj2mQ7xR4tZ8wV'\nLOG_LEVEL=info\n"
    cleaned, count = redact(env)
    assert count == 2
    assert cleaned == f"DEBUG=true\nPORT=8080\nDB_PASSWORD={MARK}\nAPI_TOKEN='{MARK}'\nLOG_LEVEL=info\n"


def test_long_inputs_stay_fast() -> None:
    import time

    blob = "A" * 200_000 + " token=" + "b/" * 100_000 + " password: " + "x" * 200_000
    started = time.perf_counter()
    redact(blob)
    assert time.perf_counter() - started < 2.0
