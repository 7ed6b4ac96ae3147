"""The user scope (issue 49, docs/contract/21-user-scope.md): which store a memory lives in.

`project`: the workspace's own store; `user`: the person's store outside every repository, which
retrieval, recall and the briefing read beside the project's. A request names the store it means
with `scope` (absent: the project); a reply's every memory says which store holds it.
"""

from __future__ import annotations

from typing import Literal

from graph.core.contract.base import _Strict

Scope = Literal["project", "user"]
PROJECT: Scope = "project"
USER: Scope = "user"


class ScopeParams(_Strict):
    """`scope` of a write, a getMemory, a forget, an export or an import."""

    scope: Scope = PROJECT


class ReadScopeParams(_Strict):
    """`scope` of listMemories and of a retrieval: one store, or `all` (both; a retrieval's default)."""

    scope: Literal["project", "user", "all"] = "all"


class Scoped(_Strict):
    """A typed request that may name the user store (`scope: "user"`); absent or `project`: this one."""

    scope: Scope | None = None
