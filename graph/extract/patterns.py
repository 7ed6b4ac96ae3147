"""The offline extractor's pattern phase: URLs, paths, dates, tickets, error codes and code
symbols found by regular expression in a sentence and masked before its words are read
(graph.extract.extractor). Only the standard library is used."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import NamedTuple

from graph.extract.vocabulary import _MONTHS, _tech_key, _words, normalise

_MASK = "\x00"


class _Mention(NamedTuple):
    start: int
    end: int
    key: str
    surface: str
    kind: str


def _mention(start: int, surface: str, kind: str, key: str | None = None) -> _Mention:
    return _Mention(start, start + len(surface), normalise(key if key is not None else surface), surface, kind)


def _code_or_tech(start: int, surface: str, kind: str) -> list[_Mention]:
    """A code-shaped token is a technology when the lexicon knows it ("Node.js", "LanceDB")."""
    tech = _tech_key(surface)
    return [_mention(start, surface, "technology" if tech else kind)]


_URL = re.compile(r"(?<![\w@])(?:https?|ftp)://[^\s<>\"'`)\]]+")
_URL_TICKET = re.compile(r"\b([A-Z][A-Z0-9]{1,9}-\d+)(?![\w-])|/(?:pull|pulls|issues|merge_requests)/(\d+)\b")


def _url(match: re.Match[str]) -> list[_Mention]:
    """A URL is kept whole; a ticket in its path also counts, so links meet their tickets."""
    url = match.group(0).rstrip(".,;:!?")
    found = [_mention(match.start(), url, "identifier")]
    for ticket in _URL_TICKET.finditer(url):
        key = ticket.group(1) or f"#{ticket.group(2)}"
        found.append(_Mention(match.start(), match.start() + len(url), normalise(key), key, "issue"))
    return found


_PATH = re.compile(r"(?<![\w.~/\\-])(?:~|\.\.?)?[/\\]?(?:[\w.-]+[/\\])+[\w.-]*")
_BARE_FILE = re.compile(
    r"(?<![\w./\\-])[\w-]+(?:\.[\w-]+)?\.(?i:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|md|rst|yaml|yml|toml|ini"
    r"|cfg|txt|rs|go|java|kt|rb|php|cs|cpp|cc|c|h|hpp|sh|sql|html|css|scss|lock|ipynb|csv|xml|proto"
    r"|gradle|swift|vue|svelte|log)(?![\w-])"
)


def _path(match: re.Match[str]) -> list[_Mention]:
    """Slashed paths; "and/or" or "I/O" are not files, so a path needs an extension or depth."""
    path = match.group(0).rstrip(".-")
    separators = path.count("/") + path.count("\\")
    last = re.split(r"[/\\]", path)[-1]
    looks_like_file = (
        re.search(r"\.[A-Za-z0-9]{1,8}$", last) is not None
        or separators >= 2
        or path.startswith(("/", "./", "../", "~/"))
        or path.endswith(("/", "\\"))
    )
    if not looks_like_file or not re.search(r"[^\W\d_]", path):
        return []
    return [_mention(match.start(), path, "file", path.removeprefix("./"))]


def _bare_file(match: re.Match[str]) -> list[_Mention]:
    return _code_or_tech(match.start(), match.group(0), "file")


_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?)?\b")
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(rf"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"(?i)\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"(?i)\b({_MONTH})\.?\s+(\d{{4}})\b")


def _date(match: re.Match[str], year: str, month: int, day: str | None) -> list[_Mention]:
    """Dates are keyed in ISO form, so "7 May 2023" and "May 7, 2023" are one node."""
    if not 1 <= month <= 12 or (day is not None and not 1 <= int(day) <= 31):
        return []
    key = f"{year}-{month:02d}" + (f"-{int(day):02d}" if day is not None else "")
    return [_mention(match.start(), match.group(0), "date", key)]


def _iso_date(match: re.Match[str]) -> list[_Mention]:
    return _date(match, match.group(1), int(match.group(2)), match.group(3))


def _day_month_year(match: re.Match[str]) -> list[_Mention]:
    return _date(match, match.group(3), _MONTHS[match.group(2).casefold()], match.group(1))


def _month_day_year(match: re.Match[str]) -> list[_Mention]:
    return _date(match, match.group(3), _MONTHS[match.group(1).casefold()], match.group(2))


def _month_year(match: re.Match[str]) -> list[_Mention]:
    return _date(match, match.group(2), _MONTHS[match.group(1).casefold()], None)


_TICKET_WORD = re.compile(r"(?i)\b(?:pr|mr|pull request|issue|ticket)\s*#?\s*(\d+)\b|\bbug\s*#\s*(\d+)\b")
_HASH_TICKET = re.compile(r"(?<![\w&#/])#(\d+)\b")
_JIRA = re.compile(r"\b([A-Z][A-Z0-9]{1,9})-(\d+)(?![\w-])")
_NOT_TICKET_PREFIXES = _words("utf iso sha md rfc gpt covid http tls ssl aes rsa es ecma ipv cve")
_HTTP_STATUS = re.compile(r"\bHTTP[ /]?([1-5]\d\d)\b")
_PLAN_REF = re.compile(r"(?<![\w-])(?:Plan[\s_#-]*|plan[_#-])(\d+)(?![\w-])")
_UPPER_SNAKE = re.compile(r"(?<!\w)(?=[A-Z0-9_]*[A-Z])[A-Z0-9]+(?:_[A-Z0-9]+)+(?!\w)")
_ERROR_CLASS = re.compile(r"(?<!\w)[A-Z]\w*(?:Error|Exception)(?!\w)")


def _ticket(match: re.Match[str]) -> list[_Mention]:
    """PRs and issues share GitHub's number space: "PR #482", "issue 482" and "#482" are one node."""
    number = next(group for group in match.groups() if group)
    return [_mention(match.start(), match.group(0), "issue", f"#{number}")]


def _jira(match: re.Match[str]) -> list[_Mention]:
    if match.group(1).casefold() in _NOT_TICKET_PREFIXES:
        return []
    return [_mention(match.start(), match.group(0), "issue")]


def _http_status(match: re.Match[str]) -> list[_Mention]:
    return [_mention(match.start(), match.group(0), "issue", f"http {match.group(1)}")]


def _plan_key(raw: str) -> str:
    """ "Plan 015", "plan-15" and a bare "015" plan id are one plan."""
    numbered = re.fullmatch(r"(?i)(?:plan[\s_#-]*)?(\d+)", raw.strip())
    return f"plan-{int(numbered.group(1))}" if numbered else f"plan:{normalise(raw)}"


def _plan_ref(match: re.Match[str]) -> list[_Mention]:
    surface = match.group(0)
    return [_Mention(match.start(), match.end(), _plan_key(surface), surface, "plan")]


def _issue_code(match: re.Match[str]) -> list[_Mention]:
    return [_mention(match.start(), match.group(0), "issue")]


_ERROR_WORDS = _words("""
    e err error errors exc exception fail failed failure fatal bad busy timeout timedout denied invalid
    missing refused exceeded conflict unavailable unauthorized forbidden overflow abort aborted panic
    oom lock locked deadlock backlog not unknown illegal corrupt broken
""")
"""Parts of an UPPER_SNAKE name that make it an error code (E_LEDGER_LOCK, WORKSPACE_BUSY);
without one it is a constant, flag or environment variable (SENTRY_DSN, TEST_SCHEMA)."""


def _upper_snake(match: re.Match[str]) -> list[_Mention]:
    parts = match.group(0).casefold().split("_")
    error = any(part in _ERROR_WORDS or part.isdigit() for part in parts)
    return [_mention(match.start(), match.group(0), "issue" if error else "identifier")]


_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?")
_PASCAL = re.compile(r"(?<!\w)[A-Z][A-Za-z0-9]*(?:\(\))?(?!\w)")
_CAMEL = re.compile(r"(?<!\w)[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*(?:\(\))?(?!\w)")
_SNAKE = re.compile(r"(?<!\w)_*[a-z][a-z0-9]*(?:_+[a-z0-9]+)+_*(?:\(\))?(?!\w)")


def _dotted(match: re.Match[str]) -> list[_Mention]:
    """ "cognee.cognify" or "os.path.join()"; "e.g" is not code, so each part needs two letters."""
    surface = match.group(0)
    if any(len(part) < 2 for part in surface.removesuffix("()").split(".")):
        return []
    return _code_or_tech(match.start(), surface, "identifier")


def _pascal(match: re.Match[str]) -> list[_Mention]:
    """Only mixed-case words with two humps: "Redis" is a word, "APIs" a plural, "MemoryStore" code."""
    surface = match.group(0)
    word = surface.removesuffix("()")
    uppers = sum(char.isupper() for char in word)
    if uppers < 2 or not any(char.islower() for char in word) or re.fullmatch(r"[A-Z]+s", word):
        return []
    if _tech_key(word):
        return []  # "GitHub", "LanceDB": read word by word, where "GitHub Actions" is one name
    return [_mention(match.start(), surface, "identifier")]


def _code_symbol(match: re.Match[str]) -> list[_Mention]:
    return _code_or_tech(match.start(), match.group(0), "identifier")


_Handler = Callable[[re.Match[str]], list[_Mention]]
_PATTERN_PHASES: tuple[tuple[re.Pattern[str], _Handler], ...] = (
    (_URL, _url),
    (_PATH, _path),
    (_BARE_FILE, _bare_file),
    (_ISO_DATE, _iso_date),
    (_DAY_MONTH_YEAR, _day_month_year),
    (_MONTH_DAY_YEAR, _month_day_year),
    (_MONTH_YEAR, _month_year),
    (_TICKET_WORD, _ticket),
    (_HASH_TICKET, _ticket),
    (_JIRA, _jira),
    (_HTTP_STATUS, _http_status),
    (_PLAN_REF, _plan_ref),
    (_UPPER_SNAKE, _upper_snake),
    (_ERROR_CLASS, _issue_code),
    (_DOTTED, _dotted),
    (_PASCAL, _pascal),
    (_CAMEL, _code_symbol),
    (_SNAKE, _code_symbol),
)
"""Most specific first; each phase masks what it took so later phases cannot re-read it."""


def _pattern_mentions(sentence: str) -> tuple[str, list[_Mention]]:
    """Mentions found by pattern, and the sentence with their spans masked out."""
    found: list[_Mention] = []

    def take(match: re.Match[str], handler: _Handler) -> str:
        mentions = handler(match)
        if not mentions:
            return match.group(0)
        found.extend(mentions)
        cut = mentions[0].end - match.start()
        return _MASK * cut + match.group(0)[cut:]

    masked = sentence
    for pattern, handler in _PATTERN_PHASES:
        masked = pattern.sub(functools.partial(take, handler=handler), masked)
    return masked, found


# --- mentions found word by word ----------------------------------------------------
