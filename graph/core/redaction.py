"""Secrets out before anything is embedded, stored or served: known key and token shapes, credentials
in URLs and headers, and values assigned to a name that says secret become [redacted].

The shapes follow gitleaks' rule set (github.com/gitleaks/gitleaks, cmd/generate/config/rules) for the
providers an agent session meets most, plus one keyword rule in the spirit of its generic-api-key
rule. No scanner library is used: detect-secrets has had no release since 2024, gitleaks is Go, and
both report findings rather than rewrite text. Only the secret itself is replaced: a database URL
keeps its scheme, user and host, `DB_PASSWORD=` keeps its name. Hashes, UUIDs, commit ids and
base64 data carry no prefix and no secret name, so they are left alone
(tests/support/fixtures/redaction_corpus.json measures both sides). Free of session imports: memories use it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from graph.core.redaction_context import CONTEXT_RULES, Check

MARK = "[redacted]"

_SHAPES = [
    # (keywords, any of which the text holds, lowercased, before the pattern is tried; the pattern)
    (
        "private key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("sk-", r"\bsk-[A-Za-z0-9_\-]{16,}"),  # OpenAI, Anthropic (sk-ant-), OpenRouter (sk-or-)
    ("ghp_ gho_ ghu_ ghs_ ghr_", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    ("github_pat_", r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    ("a3t akia asia abia acca", r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b"),  # AWS access key ids
    ("xox", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"),  # Slack
    ("xapp-", r"\bxapp-\d-[A-Za-z0-9\-]{10,}"),
    ("aiza", r"\bAIza[0-9A-Za-z_\-]{35}\b"),  # Google
    ("ya29.", r"\bya29\.[0-9A-Za-z_\-]{20,}"),  # Google OAuth access token
    ("eyj", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),  # JWT (header and claims are JSON)
    ("sk_ rk_", r"\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,}"),  # Stripe secret and restricted keys
    ("whsec_", r"\bwhsec_[A-Za-z0-9+/]{24,}"),  # Stripe webhook secret
    (
        "glpat- glptt- gldt- glrt- glsoat- glcbt- glimt- glft- glffct- glagent-",
        r"\bgl(?:pat|ptt|dt|rt|soat|cbt|imt|ft|ffct|agent)-[A-Za-z0-9_\-]{20,}",
    ),  # GitLab
    ("gr1348941", r"\bGR1348941[A-Za-z0-9_\-]{20,}"),  # GitLab runner registration
    ("npm_", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("hf_", r"\bhf_[A-Za-z0-9]{30,}"),  # Hugging Face
    ("api_org_", r"\bapi_org_[A-Za-z0-9]{30,}"),
    ("fbt_", r"\bfbt_[0-9a-f]{12}_[A-Za-z0-9_\-]{20,}"),  # flowbaby's own team-server tokens
    ("pypi-", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    ("sg.", r"\bSG\.[A-Za-z0-9_\-]{20,24}\.[A-Za-z0-9_\-]{39,50}"),  # SendGrid
    ("_v1_", r"\bdo[por]_v1_[a-f0-9]{64}\b"),  # DigitalOcean
    ("shp", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"),  # Shopify
    ("dapi", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),  # Databricks
    ("sk", r"\bSK[0-9a-fA-F]{32}\b"),  # Twilio
    ("age-secret-key-1", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b"),
    ("hvs. hvb. hvr.", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),  # HashiCorp Vault
    ("glc_ glsa_", r"\b(?:glc|glsa)_[A-Za-z0-9_\-+/=]{32,}"),  # Grafana
    ("lin_", r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b"),  # Linear
    ("dp.", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}\b"),  # Doppler
    ("atatt3", r"\bATATT3[A-Za-z0-9_\-=]{180,}"),  # Atlassian API token
    (
        "gsk r8 tvly pplx xai",
        r"\b(?:gsk|r8|tvly|pplx|xai)[_-][A-Za-z0-9]{32,}",
    ),  # Groq, Replicate, Tavily, Perplexity, xAI
    ("dckr_pat_", r"\bdckr_pat_[A-Za-z0-9_\-]{27,}"),  # Docker Hub
    ("sntry", r"\bsntry[su]_[A-Za-z0-9_\-+/=]{40,}"),  # Sentry
    ("pmak-", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),  # Postman
    ("key-", r"\bkey-[0-9a-f]{32}\b"),  # Mailgun
    (":aa", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b"),  # Telegram bot
    ("hooks.slack.com", r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+\-]{20,}"),
    ("bearer", r"\b[Bb]earer\s+[A-Za-z0-9\-._~+/]{16,}=*"),
]

_SECRET_NAME = re.compile(
    r"(?i)[\w.\-]{0,60}?(?:password|pass[_\-]word|passwd|passphrase|secret|token|credentials?|apikey"
    r"|(?:api|access|secret|private|client|auth|account|signing|encryption|master|session|license|consumer|webhook)"
    r"[_\-]?key|private[_\-]?key[_\-]?id|client-key-data|x-(?:amz|goog)-signature)"
    r"|(?:[\w.\-]{0,60}?[_.\-])?(?:pass|pwd|pw)|(?-i:[A-Z0-9_]{0,60}_KEY)"
)
"""A name that says its value is a secret (matched whole): DB_PASSWORD, client_secret, X-Auth-Token,
apiKey, aws_secret_access_key, STRIPE_KEY, pass_word, pw, private_key_id, client-key-data (kubeconfig),
X-Amz-Signature; not max_tokens, PASSWORD_MIN_LENGTH, bypass or client-certificate-data."""
_NAME_END = re.compile(
    r"(?i)(?:password|pass[_\-]word|passwd|passphrase|secret|token|credentials?|key|key[_\-]id|key-data|signature"
    r"|pass|pwd|pw)(?P<sep>\\?[\"']?[ \t]*(?:=>|:=|=|:)[ \t]*)"
)
"""Where such a name ends and its value begins; found first, as it is rare, then the name is read back."""
_VALUE = re.compile(
    r"(?P<q>\\?[\"'`])(?P<quoted>(?:(?!(?P=q))[^\r\n]){1,2000}?)(?P=q)"
    r"|(?P<bare>[^\s\"'`,;<>(){}\[\]\\=](?:[^\s\"'`<>(){}\[\]\\,;]|[,;](?![\s\"'`<>)}\]\\]|$))*+)"
    r"(?=[,;]?(?:[\s\"'`<>)}\]\\]|$))"
)
"""`.env`, shell, INI, YAML, JSON (escaped too), query strings, headers (`X-Api-Key:`): a quoted value,
or a bare one up to a space, quote or bracket (a bracket after it makes it a call: `token = get()`)."""
_ENV_VALUE = re.compile(r"(?P<bare>[^\s\"'`=]\S*+)")
"""`NAME=value` after a space or at a line's start (`.env`, `PGPASSWORD=x psql`): the value runs to the
next space, parentheses and all."""
_RUN = re.compile(r"[^\s\"'`<>(){}\[\]\\]*+")
"""Where a bare value that failed (`token=get_token()`) ends: no name inside it is tried again."""
_CODE_NAME = re.compile(r"[A-Za-z_][A-Za-z_.]*")
"""A bare value of letters only is a variable or type (`token = settings.token`, `api_key: SecretStr`)."""
_CALL = re.compile(r"[A-Za-z_][\w.]*\(")
"""A value that starts as a call is code (`    token=make_token(user),`)."""
_NOT_SECRET = {"true", "false", "null", "none", "nil", "undefined", "yes", "no", "on", "off"}

_URL_PASSWORD = re.compile(r"(?P<head>://[^\s:/@\"'<>]*:)(?P<s>[^\s@/\"'<>]+)(?=@)")
"""scheme://user:password@host: only the password goes."""
_CURL_USER = re.compile(r"(?P<head>(?:\s-u|--user)[ \t=]+[\"']?[^\s:\"']+:)(?P<s>[^\s\"']+)")
_AUTHORIZATION = re.compile(
    r"(?i)(?P<head>\b(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?)"
    r"(?P<s>(?:[^\"'\\\r\n]|\\(?![\\\"'nrt]))+)"
)
"""An Authorization header, in a request, in JSON or in escaped JSON: its whole value goes."""


def _keep(value: re.Match[str]) -> bool:
    """Whether a named value is plainly no secret: a variable, a flag, a reference to one elsewhere."""
    quoted = value.groupdict().get("q")
    text = value.group("quoted" if quoted else "bare")
    if MARK in text or text.startswith(("$", "%(", "{{", "/", "~/", "./", "../")):
        return True
    return not quoted and (
        text.lower() in _NOT_SECRET
        or text.isdigit()
        or _CODE_NAME.fullmatch(text) is not None
        or _CALL.match(text) is not None
    )


def _named(text: str) -> tuple[str, int]:
    """Values given to names that say secret."""
    pieces: list[str] = []
    done = hits = 0
    found = _NAME_END.search(text)
    while found is not None:
        start, name_end = found.start(), found.start("sep")
        while start > 0 and name_end - start <= 80 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
            start -= 1
        value, resume = None, found.end()
        if start >= done and _SECRET_NAME.fullmatch(text, start, name_end):
            env = found.group("sep") == "=" and (start == 0 or text[start - 1].isspace())
            value = (_ENV_VALUE.match(text, found.end()) if env else None) or _VALUE.match(text, found.end())
            if value is None:
                resume = _RUN.match(text, resume).end()  # type: ignore[union-attr]  # (matches anywhere)
        if value is None or _keep(value):
            found = _NAME_END.search(text, resume)
            continue
        group = "quoted" if value.groupdict().get("q") else "bare"
        pieces += [text[done : value.start(group)], MARK]
        done, hits = value.end(group), hits + 1
        found = _NAME_END.search(text, value.end())
    return "".join([*pieces, text[done:]]), hits


def _rule(
    pattern: re.Pattern[str], group: str | int = "s", word_start: bool = False, check: Check | None = None
) -> Callable[[str], tuple[str, int]]:
    """Replace `group` of every match with MARK (the rest of the match stays), unless it already holds
    it or `check` refuses the match. `word_start`: only a match that starts a word (checked here rather
    than with a leading `\\b`, which would cost the pattern its fast literal-prefix search)."""

    def apply(text: str) -> tuple[str, int]:
        hits = 0

        def sub(match: re.Match[str]) -> str:
            nonlocal hits
            before = text[match.start() - 1] if match.start() else " "
            if MARK in match.group(group) or (word_start and (before.isalnum() or before == "_")):
                return match.group(0)
            if check is not None and not check(match):
                return match.group(0)
            hits += 1
            start, end = match.span(group)
            whole = match.group(0)
            return whole[: start - match.start()] + MARK + whole[end - match.start() :]

        return pattern.sub(sub, text), hits

    return apply


_RULES = [
    *(
        (tuple(keys.split()), _rule(re.compile(shape.removeprefix(r"\b"), re.S), 0, shape.startswith(r"\b")))
        for keys, shape in _SHAPES
    ),
    (("://",), _rule(_URL_PASSWORD)),
    (("-u", "--user"), _rule(_CURL_USER)),
    (("authorization",), _rule(_AUTHORIZATION)),
    *((keys, _rule(pattern, check=check)) for keys, pattern, check in CONTEXT_RULES),
    (("pass", "pw", "secret", "token", "credential", "key", "signature"), _named),
]


PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.S | re.I)
"""Text a user marked private in an agent session: dropped to the span's end, or the text's if unclosed."""


def clean(text: str) -> tuple[str, int]:
    """A session's text as flowbaby may keep it: `<private>` spans dropped, then secrets redacted
    (session chunks and titles, capture's summaries and its LLM request)."""
    return redact(PRIVATE.sub("", text) if "<private" in text.lower() else text)


def redact(text: str) -> tuple[str, int]:
    """The text with secrets replaced, and how many were replaced."""
    lowered = text.lower()  # a rule whose keywords the text lacks is skipped; redacting adds none
    count = 0
    for keywords, rule in _RULES:
        if any(keyword in lowered for keyword in keywords):
            text, hits = rule(text)
            count += hits
    return text, count
