"""The pool's sizes come from the process environment; a bad value is refused with its name."""

from __future__ import annotations

import pytest

from graph.backends.team.pool import POOL_MAX_ENV, POOL_MIN_ENV, POOL_TIMEOUT_ENV, PoolSettings
from graph.core.contract import FlowbabyError


def test_defaults_and_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (POOL_MIN_ENV, POOL_MAX_ENV, POOL_TIMEOUT_ENV):
        monkeypatch.delenv(name, raising=False)
    assert PoolSettings.from_env() == PoolSettings(1, 8, 10.0)
    monkeypatch.setenv(POOL_MIN_ENV, "12")
    assert PoolSettings.from_env() == PoolSettings(12, 12, 10.0)  # MAX follows a larger MIN
    monkeypatch.setenv(POOL_MAX_ENV, "20")
    monkeypatch.setenv(POOL_TIMEOUT_ENV, "0.5")
    assert PoolSettings.from_env() == PoolSettings(12, 20, 0.5)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (POOL_MIN_ENV, "0", POOL_MIN_ENV),
        (POOL_MAX_ENV, "many", POOL_MAX_ENV),
        (POOL_TIMEOUT_ENV, "0", POOL_TIMEOUT_ENV),
        (POOL_MAX_ENV, "1", "must be at least FLOWBABY_PG_POOL_MIN"),
    ],
)
def test_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str) -> None:
    monkeypatch.setenv(POOL_MIN_ENV, "2")
    monkeypatch.setenv(name, value)
    with pytest.raises(FlowbabyError, match=message):
        PoolSettings.from_env()
