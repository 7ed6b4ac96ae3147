"""Memory-browser sessions on a real team server (`flowbaby serve` on a real Postgres, tokens made by
`flowbaby tokens` in a subprocess), signed in as the page does (POST /ui/signin with the user's own
token, then the cookie and the session key header): revoking the token ends its sessions and codes
(issue 45 item 10), and one user signing in 1,000 times signs no one else out (item 13)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.integration.test_team_auth import _bearer, _create_tokens, _env, _team_server, tokens
from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
REVOKED_WITHIN_SEC = 6.0
"""A token's answer is cached 5 s (graph.core.api_tokens.CACHE_SEC), a revocation takes effect within it."""


@dataclass
class Team:
    url: str
    env: dict[str, str]
    tokens: dict[str, str]


@pytest.fixture(scope="module")
def team(postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    env = _env(postgres.create_database())
    made = _create_tokens(env)
    carol = tokens(env, "create", "--user", "carol", "--namespace", "alpha")
    assert carol.returncode == 0, carol.stderr
    made["carol"] = carol.stdout.strip()
    with _team_server(tmp_path_factory.mktemp("team-browser"), env) as url:
        yield Team(url, env, made)


def _page(url: str) -> dict[str, str]:
    return {"X-Flowbaby-Browser": "1", "Origin": url}


def _signed_in(url: str, body: dict[str, str]) -> httpx.Client:
    """A browser of its own (cookie jar) signed in with `body` as the page does; it sends the session
    key the reply names (if the server names one) with every request, as the page does."""
    client = httpx.Client(base_url=url, timeout=30, headers=_page(url))
    reply = client.post("/ui/signin", json=body)
    assert reply.status_code == 200, reply.text
    key = reply.json().get("sessionKey")
    if key:
        client.headers["X-Flowbaby-Session-Key"] = key
    return client


def _works(client: httpx.Client, namespace: str) -> bool:
    answer = client.get(f"/api/ns/{namespace}/agent/background")
    assert answer.status_code in (200, 401), answer.text
    return answer.status_code == 200


def test_one_user_signing_in_1000_times_signs_no_one_else_out(team: Team) -> None:
    bob = _signed_in(team.url, {"token": team.tokens["bob"]})
    first = _signed_in(team.url, {"token": team.tokens["alice"]})
    assert _works(bob, "beta") and _works(first, "alpha")
    with httpx.Client(base_url=team.url, timeout=30, headers=_page(team.url)) as again:  # one connection
        for _ in range(999):
            assert again.post("/ui/signin", json={"token": team.tokens["alice"]}).status_code == 200
    last = _signed_in(team.url, {"token": team.tokens["alice"]})
    # bob's session is his: alice's sign-ins count against alice only.
    assert _works(bob, "beta")
    assert bob.get("/ui/session").json()["user"] == "bob"
    # alice's newest works; her oldest made room for them (a cap per user, not one for everyone).
    assert _works(last, "alpha")
    assert not _works(first, "alpha")
    # codes too: alice minting 1,000 leaves bob's code live.
    code = httpx.post(f"{team.url}/api/ui/codes", headers=_bearer(team.tokens["bob"], "beta")).json()["code"]
    with httpx.Client(base_url=team.url, timeout=30, headers=_bearer(team.tokens["alice"], "alpha")) as alice:
        for _ in range(1000):
            assert alice.post("/api/ui/codes").status_code == 201
    assert _signed_in(team.url, {"code": code}).get("/ui/session").json()["user"] == "bob"


def test_revoking_a_token_ends_the_browser_sessions_it_opened(team: Team) -> None:
    carol = team.tokens["carol"]
    session = _signed_in(team.url, {"token": carol})
    minted = httpx.post(f"{team.url}/api/ui/codes", headers=_bearer(carol, "alpha"))
    assert minted.status_code == 201 and _works(session, "alpha")

    revoked = tokens(team.env, "revoke", "--user", "carol")
    assert revoked.returncode == 0, revoked.stderr
    began = time.monotonic()
    while _works(session, "alpha") and time.monotonic() - began < REVOKED_WITHIN_SEC + 2:
        time.sleep(0.25)
    assert not _works(session, "alpha"), "a session opened with a revoked token still works"
    assert time.monotonic() - began <= REVOKED_WITHIN_SEC
    who = session.get("/ui/session").json()
    assert who["signedIn"] is False and who["user"] is None
    # The code carol's token minted before the revocation opens nothing now.
    redeemed = httpx.post(f"{team.url}/ui/signin", json={"code": minted.json()["code"]}, headers=_page(team.url))
    assert redeemed.status_code == 401, redeemed.text
    # alice, whose token stands, is still signed in.
    assert _works(_signed_in(team.url, {"token": team.tokens["alice"]}), "alpha")
