"""Each session's turns in order, for session search's neighbour evidence (graph.sessions.ranking).

Read from the bookkeeping once per import and kept: a search looks up the turns before and after
each candidate without a query per turn. A session this process imports is dropped at once; one
another server of the team backend imported has a new import mark, and is read again at its next
search (a mark has a resolution of one second, as the lexical lane's: graph.sessions.lexicon).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol


class TurnSource(Protocol):
    """What the order reads from the bookkeeping (SessionStore, PgSessionStore)."""

    def import_marks(self) -> dict[str, str]: ...
    def turns(self, key: str) -> list[tuple[str, int, str, int]]: ...


class TurnOrder:
    def __init__(self, store: TurnSource) -> None:
        self._store = store
        self._held: dict[str, tuple[str, list[str], dict[str, int]]] = {}
        """key -> (import mark, message ids in session order, each one's position)."""
        self._lock = threading.Lock()

    def drop(self, key: str) -> None:
        """This process just imported the session: read its order again at its next search."""
        with self._lock:
            self._held.pop(key, None)

    def around(self, keys: set[str], marks: dict[str, str] | None = None) -> Callable[[str, str], tuple[str, ...]]:
        """For turns of these sessions: (key, message id) -> the message ids of the turns just before
        and after it (none for a turn the bookkeeping does not hold). `marks`: the store's import marks,
        when the caller has just read them."""
        marks = self._store.import_marks() if marks is None else marks
        with self._lock:  # a forgotten session's ids leave with it
            for gone in [key for key in self._held if key not in marks]:
                del self._held[gone]
        orders: dict[str, tuple[list[str], dict[str, int]]] = {}
        for key in keys:
            mark = marks.get(key, "")
            with self._lock:
                held = self._held.get(key)
            if held is None or held[0] != mark:
                ids = list(dict.fromkeys(mid for mid, *_ in self._store.turns(key)))
                held = (mark, ids, {mid: n for n, mid in enumerate(ids)})
                with self._lock:
                    self._held[key] = held
            orders[key] = held[1], held[2]

        def neighbours(key: str, message_id: str) -> tuple[str, ...]:
            ids, position = orders.get(key, ([], {}))
            n = position.get(message_id)
            if n is None:
                return ()
            return tuple(ids[i] for i in (n - 1, n + 1) if 0 <= i < len(ids))

        return neighbours
