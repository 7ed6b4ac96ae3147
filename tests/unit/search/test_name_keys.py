"""graph.search.links.name_keys: the names a text writes, as the catalog reads them at start."""

from __future__ import annotations

import random
import re

from graph.search.links import _HAS_VERSION, _NAME, _VERSIONED, name_keys

_BACKTRACKING_NAME = re.compile(
    r"(?<![\w*/.-])([A-Za-z0-9*]+(?:[-_.][A-Za-z0-9*]+)+|[A-Za-z]+[0-9][A-Za-z0-9]*)(?![\w*-])"
)
"""_NAME as first written, with runs that give characters back: the possessive form must match the same."""


def test_known_names_and_their_spoken_forms() -> None:
    text = (
        "The legacy_pricing_v1 table moved to pp-*-prod (see PAW-1432 and schema.sql; "
        "a path's tail is not one: billing/reconcile.py); "
        "Pricing V2 ships 2025-03-01 at 10:30, 3rd try, 512mb, e2e and sci-fi."
    )
    assert name_keys(text) == {
        "legacy_pricing_v1",
        "pricing_v1",
        "pp-*-prod",
        "paw-1432",
        "pricing_v2",
        "schema.sql",
        "sci-fi",
    }


def test_the_fast_patterns_match_what_the_plain_ones_do() -> None:
    """Possessive runs and the version pre-check are speed only: on random texts over the characters
    the patterns care about, the same matches as the backtracking pattern and the plain scan."""
    rng = random.Random(7)
    alphabet = "aZv9V1xé-_.*/ \n"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert _NAME.findall(text) == _BACKTRACKING_NAME.findall(text), text
        if _VERSIONED.search(text):
            assert _HAS_VERSION.search(text), text
