"""Schemathesis against the served /openapi.json on a real uvicorn server: generated valid
and invalid requests for every operation must never get a 5xx, every 2xx body must match
the response model the schema declares, and every 4xx must carry an error code that
the contract (INGEST_CONTRACT.md and docs/contract/) documents, with the status it gives it."""

from __future__ import annotations

import os
import re
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import response_schema_conformance
from schemathesis.generation import GenerationMode
from schemathesis.transport.requests import SameHostRedirectsSession

from api.app import STATUS
from tests.integration.test_http_api import Server
from tests.support.contract_doc import contract_text

pytestmark = pytest.mark.slow

MIN_CASES = 1000
TOKEN = "fuzz-token"
EXAMPLES_PER_RUN = int(os.environ.get("FLOWBABY_FUZZ_EXAMPLES", "50"))
"""Cases per operation and mode (valid, invalid); operations without parameters exhaust theirs
first. Generating a case costs the test ~10 ms of CPU, answering it the server ~2 ms: at 150 the
run made ~6,900 cases and took ~70 s of CPU; at 50 every route still gets both modes and the
run well over MIN_CASES. FLOWBABY_FUZZ_EXAMPLES=150 (or more) for a deeper run."""


def _documented_codes() -> set[str]:
    return set(re.findall(r"`([0-9A-Z][0-9A-Z_]{4,})`", contract_text()))


def test_generated_requests_get_documented_answers(workspace: Path) -> None:
    # Its own user store: generated writes with `scope: "user"` must not reach the session's, which every
    # later hook test of this worker reads (their briefings would carry the fuzzed "preferences").
    env = {
        "FLOWBABY_API_TOKEN": TOKEN,
        "FLOWBABY_BUILD_GRAPH": "0",
        "FLOWBABY_USER_STORE": str(workspace.parent / "user"),
    }
    server = Server(workspace, "--rate-limit-per-minute", "0", env=env)
    try:
        server.wait_ready()
        schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 12
        modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        documented = _documented_codes()
        seen: list[tuple[str, int, str | None]] = []
        problems: list[str] = []
        # One keep-alive connection for every case (a new session per case cost a connection and its
        # set-up on both sides); the session keeps no cookie, so each case still starts with none.
        session = SameHostRedirectsSession()
        session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))

        def run(operation: Any, mode: GenerationMode) -> None:
            @settings(
                max_examples=EXAMPLES_PER_RUN,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def call(case: schemathesis.Case) -> None:
                response = case.call(
                    base_url=server.url, session=session, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
                )
                code = None
                if response.status_code >= 400:
                    try:
                        code = response.json().get("errorCode")
                    except ValueError:
                        code = None
                seen.append((operation.label, response.status_code, code))
                where = f"{operation.label} [{mode.value}] -> {response.status_code} {response.text[:200]}"
                if response.status_code >= 500:
                    problems.append(f"server error: {where}")
                elif response.status_code < 400:
                    try:
                        case.validate_response(response, checks=[response_schema_conformance])
                    except (AssertionError, BaseExceptionGroup) as failure:
                        problems.append(f"body off its schema: {where}: {failure}")
                elif response.status_code >= 400 and (
                    code not in documented or STATUS.get(code) != response.status_code
                ):
                    problems.append(f"undocumented 4xx: {where}")

            try:
                call()
            except Unsatisfiable:  # no parameters to break: nothing negative to send
                assert mode is GenerationMode.NEGATIVE

        for operation in operations:
            for mode in modes:
                run(operation, mode)
    finally:
        server.stop()
    assert not problems, "\n".join(problems[:20])
    assert len(seen) >= MIN_CASES, f"only {len(seen)} cases ran"
    assert {label for label, _, _ in seen} == {operation.label for operation in operations}  # every route
    statuses = {status for _, status, _ in seen}
    assert {200, 202, 400} <= statuses  # valid requests were accepted, invalid ones refused
