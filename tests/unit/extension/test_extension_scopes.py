"""The VS Code settings that choose the executable, the team server and the token file are
`machine` scoped: a repository's `.vscode/settings.json` cannot set them (contract 15.14)."""

from __future__ import annotations

import json
from pathlib import Path

USER_ONLY = ("command", "pythonPath", "serverUrl", "serverTokenFile", "serverNamespace")


def test_settings_that_choose_what_runs_are_machine_scoped() -> None:
    manifest = json.loads((Path(__file__).parents[3] / "extension" / "package.json").read_text())
    properties = manifest["contributes"]["configuration"]["properties"]
    assert {key: properties[f"flowbaby.{key}"].get("scope") for key in USER_ONLY} == dict.fromkeys(USER_ONLY, "machine")
    assert not [key for key, spec in properties.items() if spec.get("scope") == "machine-overridable"]
