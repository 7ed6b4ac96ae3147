"""`flowbaby adopt`: seal, as they are, the files flowbaby reads for a folder (graph.core.seal).

Two of them say where memories go: `link.json` (which workspace keeps this folder's memory) and
`server.json` (which team server gets every memory). A repository or an archive can supply either,
and adopting one makes it the user's word, so adopt first names where each unsealed one points and
seals them only when the person confirms (the command line asks on a terminal, or takes `--yes`);
the content sealed must be the content shown."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.backends.backend import adopt_stores
from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.seal import adopt_file, is_sealed, read_private_file
from graph.core.workspace import API_TOKEN_PURPOSE, DATA_DIR, LINK_FILE, LINK_PURPOSE, WorkspacePaths, resolve_workspace
from graph.core.workspace_root import link_target_text, shared_root
from graph.remote.settings import SERVER_PURPOSE, server_file


@dataclass(frozen=True)
class AdoptQuestion:
    """An unsealed file that says where memories go, what it says, and the content the person is shown."""

    path: Path
    says: str
    text: str


Confirm = Callable[[list[AdoptQuestion]], bool]


def _unsealed(path: Path, purpose: str, folder: Path, what: str) -> str | None:
    """The text of `path` when it exists without a valid seal (adopting it changes what counts), else None."""
    if not os.path.lexists(path):
        return None
    text = read_private_file(path, what, "chmod 600 it, or remove it")
    return None if is_sealed(path, purpose, folder, text.encode()) else text


def _server_says(text: str) -> str:
    try:
        record = json.loads(text)
        return f"sends every memory of the workspace to {record['url']} (namespace {record['namespace']})"
    except (ValueError, KeyError, TypeError):
        return "is not a flowbaby server settings file"


def adopt_questions(here: Path) -> list[AdoptQuestion]:
    """What adopting `here` (a resolved folder) would newly trust that decides where memories go."""
    questions = []
    link = here / DATA_DIR / LINK_FILE
    link_text = _unsealed(link, LINK_PURPOSE, here, "link file")
    if link_text is not None:
        target = link_target_text(link_text)
        says = f"keeps this folder's memory in {target}" if target else "is not a flowbaby link file"
        questions.append(AdoptQuestion(link, says, link_text))
        root = Path(target).resolve() if target and os.path.isabs(target) else here
    else:
        root = shared_root(here)
    server = server_file(WorkspacePaths(root))
    server_text = _unsealed(server, SERVER_PURPOSE, root, "server settings")
    if server_text is not None:
        questions.append(AdoptQuestion(server, _server_says(server_text), server_text))
    return questions


def adopt_workspace(folder: str | os.PathLike[str], confirm: Confirm | None = None) -> dict[str, Any]:
    """Seal what flowbaby reads for `folder`: its link.json, then in the workspace it resolves to
    server.json, api_token, the session index and the memory store, each only if present. An unsealed
    link.json or server.json is sealed only if `confirm` (shown each, with where it points) says yes;
    otherwise nothing is sealed (FLOWBABY_ERROR). The user's word that they made them; never run for them."""
    here = Path(folder).expanduser().resolve()
    questions = adopt_questions(here)
    if questions and (confirm is None or not confirm(questions)):
        listed = "; ".join(f"{question.path} {question.says}" for question in questions)
        message = (
            f"Nothing sealed: {listed}; you did not confirm it. If you made it yourself, run "
            f"`flowbaby adopt --yes {here}`; otherwise remove it"
        )
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, message)
    shown = {question.path: question.text for question in questions}
    sealed: list[str] = []
    link = here / DATA_DIR / LINK_FILE
    if os.path.lexists(link):
        _adopt(link, LINK_PURPOSE, here, "link file", shown)
        sealed.append(str(link))
    paths = resolve_workspace(here)
    for path, purpose, what in (
        (server_file(paths), SERVER_PURPOSE, "server settings"),
        (paths.api_token, API_TOKEN_PURPOSE, "API token file"),
    ):
        if os.path.lexists(path):
            _adopt(path, purpose, paths.root, what, shown)
            sealed.append(str(path))
    stores, memories = adopt_stores(paths)
    return {"workspace": str(paths.root), "sealed": [*sealed, *stores], "memories": memories}


def _adopt(path: Path, purpose: str, folder: Path, what: str, shown: dict[Path, str]) -> None:
    """adopt_file, where a link.json or server.json must hold what the person was shown (or be sealed already)."""
    asked = purpose in (LINK_PURPOSE, SERVER_PURPOSE)
    if asked and path not in shown and _unsealed(path, purpose, folder, what) is not None:
        message = f"Nothing more sealed: {path} was not shown to you; run `flowbaby adopt` again"
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, message)
    adopt_file(path, purpose, folder, what, expected=shown.get(path))
