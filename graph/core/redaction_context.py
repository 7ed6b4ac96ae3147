"""Secrets known by where they stand rather than by their shape (graph.core.redaction runs these):
a command's password flag (`--password X`, `mysql -pX`, `sshpass -p X`, `redis-cli -a X`,
`docker login -p X`), a `.netrc` or `.pgpass` line, a cookie (header, curl's `-b`, a cookie jar
line), Docker's `"auth"` (base64 of `user:password`), a PuTTY key's private lines, and a password
stated in prose ("the password is X"). Each pattern names the secret `s`; only it is replaced.
Look-alikes they must leave alone (`--password-stdin`, `mysql -p db`, `ssh -p 22`, `/etc/passwd`
lines, "the password is wrong") are in tests/support/fixtures/redaction_corpus.json.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

_VALUE = r"""(?P<q>["'])?(?P<s>(?(q)[^"'\n$][^"'\n]*|[^\s"'$<\-{(*%][^\s"'<>;|&)]*))"""
"""A flag's value, quoted or bare; not a reference (`$VAR`, `<password>`), another flag or a subshell."""
_COMMAND = r"[^\n|;&]{0,400}?[ \t]"
"""The rest of one command, up to the flag (not past a pipe or another command)."""

_FLAG = re.compile(
    r"(?i)(?<![\w-])--(?:[a-z0-9]+-)*(?:password|passwd|pass|passphrase|token|secret|api-?key|access-key"
    r"|secret-key|client-secret|secret-string)(?:=|[ \t]+)" + _VALUE
)
"""`--password X`, `--db-password=X`, `--token "X"`; not `--password-stdin`, `--token-file F`, `--max-tokens 5`."""
_TOOL_FLAGS = [
    (("mysql", "mariadb"), re.compile(r"\b(?:mysql\w*|mariadb[\w-]*)\b" + _COMMAND + r"-p(?=\S)" + _VALUE)),
    (("sshpass",), re.compile(r"\bsshpass\b" + _COMMAND + r"-p[ \t]*" + _VALUE)),
    (("redis-cli",), re.compile(r"\bredis-cli\b" + _COMMAND + r"-a[ \t]+" + _VALUE)),
    (
        ("login",),
        re.compile(r"\b(?:docker|podman|nerdctl|buildah|skopeo)[ \t]+login\b" + _COMMAND + r"-p[ \t]+" + _VALUE),
    ),
    (("curl",), re.compile(r"\bcurl\b" + _COMMAND + r"(?:-b|--cookie)[ \t]+(?P<q>[\"'])?(?P<s>[^\s\"'=]+=[^\s\"']*)")),
]
"""Short flags that are a password only for that command: `mysql -pX` (attached; `-p` alone
prompts), `sshpass -p X`, `redis-cli -a X`, `docker login -p X`; curl's cookie `-b name=value`."""
_NETRC = re.compile(r"\b(?:machine[ \t]+\S+|default)\s+login\s+\S+(?:\s+account\s+\S+)?\s+password\s+(?P<s>\S+)")
"""`machine host login user password X` (one line or several), and `default login … password X`."""
_PGPASS = re.compile(
    r"(?m)^[ \t]*+(?P<host>[\w.\-*\[\]]{1,253}+):(?:\d{1,5}|\*):[^:\s]++:[^:\s]++:(?P<s>[^:\s]++)[ \t]*$"
)
"""A `.pgpass` line, host:port:database:user:password (a host with a letter, dot or `*`, a port)."""
_COOKIE = re.compile(
    r"(?m)(?:^[ \t<>]*|(?<=[\"']))(?:[Ss]et-)?[Cc]ookie\\?[\"']?[ \t]*:[ \t]*\\?[\"']?"
    r"(?P<s>[\w.\-]+=[^\r\n\"'\\]*)"
)
"""A `Cookie:` or `Set-Cookie:` header (a line's start, or quoted in JSON or code) with name=value pairs."""
_PAIR = r"[\w.\-]+=(?:[^\s;,\"'\\()]*[^\s;,\"'\\().:!?])?"
_COOKIE_IN_TEXT = re.compile(
    r"(?i)(?<![\w\-])(?:set-)?cookie[ \t]*:[ \t]*(?P<s>" + _PAIR + r"(?:[ \t]*;[ \t]*" + _PAIR + r")*)"
)
"""The same header quoted inside a sentence ("the smoke test sends Cookie: sessionid=... to staging"): its
name=value pairs, up to the first space not after a `;`, without a sentence's closing punctuation."""
_COOKIE_JAR = re.compile(r"(?m)^(?:#HttpOnly_)?\S+\t(?:TRUE|FALSE)\t\S+\t(?:TRUE|FALSE)\t\d+\t\S+\t(?P<s>\S+)[ \t]*$")
"""A line of a Netscape cookie jar (curl's `-c`): domain, flags, path, secure, expiry, name, value."""
_DOCKER_AUTH = re.compile(r"\\?\"auth\\?\"[ \t]*:[ \t]*\\?\"(?P<s>[A-Za-z0-9+/]{8,}={0,2})\\?\"")
"""`"auth": "<base64 of user:password>"` in a Docker (or Podman, Helm) registry config."""
_PUTTY = re.compile(r"Private-Lines:[ \t]*\d+[ \t]*\r?\n(?P<s>[A-Za-z0-9+/=]{4,}(?:\r?\n[A-Za-z0-9+/=]{4,})*)")
"""A PuTTY `.ppk` key's private lines (its public lines and comment stay)."""
_PROSE = re.compile(
    r"(?i)(?:\b(?:password|passphrase|passcode|passwd)\b(?:[ \t]+(?:for|of|on)[ \t]+[^\s,.;:]{1,40})?"
    r"[ \t]+(?:is|was|is now|will be|has been (?:changed|set) to)[ \t]*:?"
    r"|\b(?:reset|changed|set|rotated|updated)[ \t]+(?:(?:the|its|my|our|his|her|their)[ \t]+)?(?:[\w-]+[ \t]+)?"
    r"(?:password|passphrase|passcode)[ \t]+to)[ \t]+"
    r"(?P<q>[\"'`])?(?P<s>(?(q)[^\"'`\n]{1,200}|[^\s\"'`$<]{4,200}?))(?(q)(?P=q)|(?=[.,;:!?)]*(?:\s|$)))"
)
"""A password said in prose: "the password is hunter2", "the passphrase for prod was `x y z`", "I reset the
admin password to x"."""


def _decodes_to_credentials(value: str) -> bool:
    """Docker's auth is base64 of `user:password`; other `"auth"` values ("required", "oauth") are not."""
    try:
        return b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False


def _secretish(value: str) -> bool:
    """A bare word from prose that looks like a password, not an English word or a number:
    letters with a digit or a symbol, or six digits and more."""
    if value.isdigit():
        return len(value) >= 6
    has_letter = any(c.isalpha() for c in value)
    return has_letter and any(not c.isalpha() for c in value) and not value.startswith(("/", "~/", "./", "http"))


Check = Callable[[re.Match[str]], bool]
CONTEXT_RULES: list[tuple[tuple[str, ...], re.Pattern[str], Check | None]] = [
    # (keywords, any of which the lowered text holds; the pattern, whose group `s` is replaced; a check on the match)
    (("--",), _FLAG, None),
    *((keys, pattern, None) for keys, pattern in _TOOL_FLAGS),
    (("machine", "default"), _NETRC, None),
    ((":",), _PGPASS, lambda m: any(c.isalpha() or c in ".*" for c in m.group("host"))),
    (("cookie",), _COOKIE, None),
    (("cookie",), _COOKIE_IN_TEXT, None),
    (("\t",), _COOKIE_JAR, None),
    (('auth"', 'auth\\"'), _DOCKER_AUTH, lambda m: _decodes_to_credentials(m.group("s"))),
    (("private-lines",), _PUTTY, None),
    (("pass",), _PROSE, lambda m: m.group("q") is not None or _secretish(m.group("s"))),
]
