"""Deterministic, offline entity and relation extraction: the LLM's stand-in in cognee.

cognee's cognify step hands each chunk to an LLM and asks for a knowledge graph
(typed nodes and named edges) and a summary. flowbaby must work with no key, no
network and no model download, and must give the same graph for the same text, so
graph.cognify.worker.offline_llm answers those prompts with this module instead.

It reads the memory document rendered by graph.cognify.worker.document (title, "Plan:" and
"Session:" header lines, "## Decisions" and the other sections), or any free text,
and finds entities with plain rules: regular expressions for paths, tickets, error
codes, code symbols and dates, small built-in lexicons for technologies, first
names, places and organisations, and head-noun rules for technical noun phrases.
Every entity is keyed by `normalise`, so two documents weeks apart that write
"Redis cache" and "redis" meet at one node: that shared key is what multi-hop
retrieval walks over. Only the standard library is used.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable
from typing import Any, NamedTuple

from graph.core.sentences import sentences


def _entries(text: str) -> list[str]:
    """A lexicon written as '|'-separated entries over several lines."""
    return [item.strip() for item in re.split(r"[|\n]", text) if item.strip()]


def _words(text: str) -> frozenset[str]:
    """A whitespace-separated word list, casefolded."""
    return frozenset(text.casefold().split())


_TECH_NAMES = _entries("""
    Redis|Memcached|Postgres|MySQL|MariaDB|SQLite|MongoDB|Cassandra|DynamoDB|CouchDB|Couchbase
    Neo4j|Elasticsearch|OpenSearch|ClickHouse|Snowflake|BigQuery|Redshift|Oracle|SQL Server
    CockroachDB|TimescaleDB|InfluxDB|etcd|ZooKeeper|Kuzu|LanceDB|Qdrant|Weaviate|Pinecone|Milvus
    Chroma|FAISS|pgvector|DuckDB|Supabase|Firebase|Firestore|RocksDB|LevelDB|LMDB|NetworkX
    Kafka|RabbitMQ|NATS|Pulsar|SQS|SNS|Kinesis|Celery|Sidekiq|Airflow|Temporal|Spark|Flink|Hadoop
    Python|JavaScript|TypeScript|Java|Kotlin|Scala|Go|Rust|Ruby|PHP|Swift|Elixir|Erlang|Haskell
    Clojure|Lua|Perl|Bash|PowerShell|SQL|GraphQL|HTML|CSS|WebAssembly|Dart|Zig
    React|Vue|Angular|Svelte|Next.js|Nuxt|Node.js|Deno|Bun|Express|NestJS|Django|Flask|FastAPI
    Pydantic|SQLAlchemy|Rails|Spring|Spring Boot|Laravel|Tailwind|jQuery|Electron|Tauri|pytest
    Jest|Vitest|Playwright|Cypress|Selenium|Webpack|Vite|esbuild|ESLint|Prettier|Ruff|mypy|pip
    npm|Yarn|pnpm|Poetry|Maven|Gradle|Bazel|CMake|LangChain|LlamaIndex|cognee|LiteLLM|PyTorch
    TensorFlow|NumPy|pandas|scikit-learn|spaCy|NLTK|Ollama|FastEmbed|tiktoken|Uvicorn|Gunicorn
    Nginx|Caddy|Envoy|Traefik|HAProxy|gRPC|WebSocket|OAuth|JWT|JSON|YAML|TOML|Protobuf|OpenAPI
    Swagger|AWS|GCP|Azure|Heroku|Vercel|Netlify|Cloudflare|DigitalOcean|Fly.io|Docker|Podman
    Kubernetes|Helm|Terraform|Pulumi|Ansible|Vagrant|Prometheus|Grafana|Datadog|Sentry
    OpenTelemetry|Jaeger|Kibana|Logstash|Splunk|PagerDuty|S3|EC2|Lambda|ECS|EKS|GKE|CloudFront
    RDS|Aurora|Linux|Ubuntu|Debian|Windows|macOS|iOS|Android|WSL|Git|GitHub|GitLab|Bitbucket
    GitHub Actions|Jenkins|CircleCI|Jira|Confluence|Slack|VS Code|IntelliJ|Vim|Emacs|Copilot
    ChatGPT|Claude|Figma|Notion|Postman|curl|SSH|TLS|HTTP|OpenSSL|LDAP|Okta|Auth0|Stripe|Twilio
    Looker|Tableau|Metabase|Superset|Power BI|dbt|Great Expectations|Fivetran|Airbyte|Debezium|Segment
    Mixpanel|Amplitude|Zendesk|Intercom|HubSpot|Salesforce|Braintree|Adyen|PayPal|Plaid|Chargebee
    SendGrid|Mailgun|Docusaurus|MkDocs|Sphinx|Hugo|Jekyll|Gatsby|Storybook|Markdown|AsciiDoc|LaTeX
    Algolia|Meilisearch|Typesense|Solr|Lucene|XGBoost|LightGBM|CatBoost|MLflow|Kubeflow|Ray|Dask
    Polars|Hugging Face|Transformers|ONNX|TensorRT|Triton|JAX|Keras|OpenCV|Weights & Biases|vLLM
    Xcode|SwiftUI|UIKit|Jetpack Compose|WorkManager|Flutter|React Native|Expo|Fastlane|TestFlight
    Crashlytics|App Store|Google Play|FCM|APNs|PgBouncer|Patroni|pgBackRest|Liquibase|Flyway|Alembic
    pg_dump|pg_restore|pg_upgrade|pg_basebackup|pg_partman|pg_stat_statements|vacuumdb|CoreDNS|Istio
    Linkerd|Consul|Vault|Nomad|Argo CD|Argo Workflows|Flux|Kustomize|containerd|SAML|OIDC|OpenID Connect
    Kerberos|DNS|SMTP|WebRTC|MQTT|AMQP|Locust|k6|JMeter|Gatling|MobX|Zustand|Apollo|Remix|Astro
    SolidJS|Sass|PostCSS|Babel|Rollup|Turborepo|Lerna|Puppeteer|Mocha|JUnit|RSpec|Hypothesis|tox|Black
    isort|Flake8|pylint|Bandit|Snyk|Dependabot|Renovate|SonarQube|Trivy|gitleaks|Semgrep|Loki|Thanos
    Honeycomb|New Relic|Fluentd|Fluent Bit|StatsD|Zipkin|Keycloak|Cognito|Vitess|PlanetScale
""")
_TECH: dict[str, str] = {name.casefold(): name for name in _TECH_NAMES}
"""Technology key -> display name."""

_ALIASES = {
    "postgresql": "postgres",
    "pg": "postgres",
    "psql": "postgres",
    "k8s": "kubernetes",
    "js": "javascript",
    "ts": "typescript",
    "mongo": "mongodb",
    "golang": "go",
    "nodejs": "node.js",
    "vscode": "vs code",
    "visual studio code": "vs code",
    "google cloud": "gcp",
    "google cloud platform": "gcp",
    "amazon s3": "s3",
    "aws lambda": "lambda",
    "sklearn": "scikit-learn",
    "chromadb": "chroma",
    "torch": "pytorch",
}
_TECH_FIRST_WORDS = frozenset(key.split()[0] for key in (*_TECH, *_ALIASES) if " " in key)
_AMBIGUOUS_TECH = _words("""
    go rust ruby swift dart react angular express flask spring bun helm lambda aurora oracle
    snowflake pulsar temporal spark chroma electron jest cypress yarn poetry windows slack notion
    copilot envoy caddy sentry rails torch segment amplitude sphinx hugo ray transformers triton expo
    vault flux apollo remix astro babel rollup mocha hypothesis black consul nomad locust honeycomb
""")
"""Technologies that are also everyday words: only counted when written capitalised."""

_GENERIC = _words("cache database db server cluster instance engine backend store datastore service api sdk")
"""Words that add nothing after a technology: "the Redis server" is Redis."""

_COMPONENT_HEADS = _words("""
    cache job queue service lock index pipeline store database db table endpoint api worker bridge
    server client module layer suite test config configuration daemon cluster container thread pool
    handler adapter driver plugin extension library package repository repo cron scheduler router
    gateway proxy backend frontend engine runner collector exporter controller middleware component
    subsystem script function method hook webhook socket connection buffer log logger ledger
    registry loader parser extractor tool cli dashboard migration build deployment branch bucket
    stream channel process page site docs portal screen view modal form widget sidecar indexer
    manager app notebook
""")
_CONCEPT_HEADS = _words("""
    token budget schema model graph policy strategy limit timeout threshold retry backoff quota
    contract protocol format key metric latency throughput error failure bug regression leak race
    deadlock constraint invariant permission credential secret payload request response event
    message batch snapshot checkpoint version flag setting option mode state embedding vector chunk
    prompt memory retrieval ingestion search ranking score window rate rollout cycle note clock
    replication plan tag attribute cookie loop notification record audit trap scanning batching
    header certificate rule outage incident
""")
_HEADS = _COMPONENT_HEADS | _CONCEPT_HEADS

_STOPWORDS = _words("""
    a an the this that these those there here it its i me my we us our you your he him his she her
    they them their who whom whose which what when where why how all both each every either neither
    no not nor and or but if then else than so because since while until unless though although as
    of in on at by for with without within from to into onto over under about above below between
    through during before after against among per via up down out off again further once also too
    very just only even still yet already ever never always often sometimes is are was were be been
    being am has have had having do does did doing done will would shall should can could may might
    must need needs needed let lets use uses used using add adds added adding keep keeps kept make
    makes made run runs ran move moves moved moving migrate migrates migrated migrating replace
    replaces replaced replacing switch switched see set get gets got go goes went gone want wants
    fix fixes fixed try tried call called note todo tbd fyi ok yes yeah maybe please thanks hi hello
    today yesterday tomorrow tonight now later soon recently currently also however therefore
    instead meanwhile pr mr id
""")
_WEAK_ADJECTIVES = _words("""
    new old current existing same other another first last next main single whole entire separate
    different various several many more most less some any such own good bad better best big small
    large real actual specific certain proper simple full additional extra few much little long
    short high low second seconds minute minutes hour hours day days week weeks month months
""")
"""Adjectives that make a noun phrase vaguer, not more specific."""

_UNIT_ACRONYMS = _words("utc gmt kb mb gb tb pb ms qps rps tps cpu gpu ram ssd api url uri ui eta asap fyi tldr")
"""Acronyms a sentence uses in passing (units, hardware, "the API"), not things worth a node."""

_PLURAL_MODIFIERS = _words("metrics settings sales operations ops jobs docs")
"""Plural words that do narrow a compound: "metrics exporter", "settings page"."""

_MONTHS = {
    "jan": 1,
    "january": 1,
    "feb": 2,
    "february": 2,
    "mar": 3,
    "march": 3,
    "apr": 4,
    "april": 4,
    "may": 5,
    "jun": 6,
    "june": 6,
    "jul": 7,
    "july": 7,
    "aug": 8,
    "august": 8,
    "sep": 9,
    "sept": 9,
    "september": 9,
    "oct": 10,
    "october": 10,
    "nov": 11,
    "november": 11,
    "dec": 12,
    "december": 12,
}
_CALENDAR = frozenset(_MONTHS) | _words("monday tuesday wednesday thursday friday saturday sunday")

_FIRST_NAMES = _words("""
    aaron adam adrian aisha alan albert alex alexander alice alicia amanda amber amelia amy andrea
    andrew angela anna anne anthony arjun audrey ava barbara ben benjamin beth betty brandon brian
    bruce calvin carl carlos carol caroline carlos catherine charles charlie charlotte chen chloe
    chris christian christina christopher claire daniel david deborah denise dennis diana diego
    dmitri donna dorothy douglas dylan edward elena eli elizabeth ella emily emma eric erin ethan
    eva evan evelyn fatima felix fiona frank gabriel gary george gina gloria greg hannah harold
    harry helen henry hiroshi ian isaac isabella jack jacob james jane janet jason jean jeffrey
    jennifer jeremy jessica joanna joe joel john jolene jon jonathan jordan jose joseph joshua juan
    judy julia julian justin karen kate katherine kelly kenji kevin kim kyle laura lauren leo liam
    linda lisa lucas lucy luis maria marie marta martin mary matthew maya megan melanie melissa mia
    michael michelle mike min mohammed nancy natalie nate nathan nicholas nicole noah nora olivia
    omar oscar pablo pamela patricia patrick paul peter priya rachel rahul raj rebecca richard
    robert ryan samantha samuel sam sandra sara sarah scott sean sharon sofia sophia stephanie
    stephen steven susan tanya teresa thomas tim timothy tom tyler victoria vincent walter wei
    william yuki zoe ana ahmed ali amir anil ananya arun ayesha bilal camila chidi daniela deepak dev
    divya emre fernando gustavo hassan ibrahim ines ivan javier jin joao kwame lars leila lin lina
    lucia mateo mei mehmet mikhail minh nadia nikhil ngozi olga pedro rafael ravi rohan sanjay sergei
    shreya sven tariq thiago tomas valentina vikram xin yusuf zara hana akira anders astrid ingrid
    jonas lukas magnus nils piotr stefan tomasz vera zofia
""")
_PLACES = frozenset(
    _entries(
        """
    london|paris|berlin|madrid|rome|tokyo|beijing|shanghai|seoul|mumbai|delhi|sydney|toronto
    vancouver|chicago|boston|seattle|austin|denver|miami|dublin|amsterdam|stockholm|oslo|helsinki
    copenhagen|zurich|vienna|prague|warsaw|lisbon|new york|san francisco|los angeles|las vegas
    usa|uk|us|eu|america|canada|mexico|brazil|france|germany|spain|italy|japan|china|india
    australia|sweden|norway|finland|denmark|ireland|england|scotland|europe|asia|africa
""".casefold()
    )
)
_PLACE_PREFIXES = _words("new san santa los las saint st fort port mount lake north south east west")
_PLACE_SUFFIXES = _words("""
    city park street avenue road lake river mountain mountains beach island islands county valley
    bay square village town state province coast hills falls canyon
""")
_PLACE_CUES = _words("in near visited visiting")
_ORG_SUFFIXES = _words("""
    inc corp corporation labs lab ltd llc gmbh foundation university institute company co
    technologies systems group bank
""")
_ORGANIZATIONS = _words("""
    google microsoft amazon apple meta facebook netflix openai anthropic ibm intel nvidia
    salesforce uber airbnb spotify twitter shopify atlassian mozilla
""")

_DETERMINERS = _words("the a an this that these those our their its my your his her some any")
_IRREGULAR = {
    "caches": "cache",
    "niches": "niche",
    "aliases": "alias",
    "statuses": "status",
    "buses": "bus",
    "viruses": "virus",
    "indices": "index",
    "apis": "api",
    "uris": "uri",
    "ids": "id",
    "movies": "movie",
    "cookies": "cookie",
    "analyses": "analysis",
    "children": "child",
    "people": "person",
    "data": "data",
}
_PLURAL_EXCEPTIONS = _words("""
    redis kubernetes postgres status bus class process access series species news analytics
    devops graphics diagnostics physics mathematics economics ethics politics chaos kudos macos
    ios windows jenkins pandas express always perhaps towards whereas sometimes
""")
_LEAD_PUNCT = " \t\"'`([{<«“‘*~,;:!?"
_TRAIL_PUNCT = " \t\"'`)]}>»”’*~.,;:!?("


def _singular(word: str) -> str:
    """Plural to singular by suffix rules, so "locks" and "lock" share a key."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if (
        len(word) < 4
        or not word.isalpha()
        or word in _PLURAL_EXCEPTIONS
        or word in _TECH
        or word.endswith(("ss", "us", "is"))
    ):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("shes", "ches", "xes", "zzes", "sses")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def normalise(name: str) -> str:
    """The key every mention of one thing resolves to, whatever its case, number or alias.

    Node ids are these keys, so "Redis", "REDIS", "redis" and "the Redis cache" in
    two different documents land on the same node.
    """
    text = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    words = text.lstrip(_LEAD_PUNCT).rstrip(_TRAIL_PUNCT).split()
    while len(words) > 1 and words[0] in _DETERMINERS:
        words = words[1:]
    text = " ".join(words)
    text = _ALIASES.get(text, text)
    if not text or text in _TECH:
        return text
    words = text.split()
    words[-1] = _singular(words[-1])
    if len(words) > 1 and words[-1] in _GENERIC:
        head = " ".join(words[:-1])
        head = _ALIASES.get(head, head)
        if head in _TECH:
            return head
    return " ".join(words)


def _tech_key(surface: str) -> str | None:
    """The technology a surface form names, if the lexicon knows it."""
    key = normalise(surface)
    return key if key in _TECH else None


# --- document structure ------------------------------------------------------------

_MASK = "\x00"
_TITLE = re.compile(r"#\s+Topic\s*:\s*(.*)", re.IGNORECASE)
_HEADER = re.compile(
    r"(Topic ID|Version|Status|Plan|Session|Agent|Time scope|Created|Updated)\s*:\s*(.*)", re.IGNORECASE
)
_HEADING = re.compile(r"#{1,6}\s+(.+?)[\s#]*")
_BULLET = re.compile(r"\s*(?:[-*+•]|\d{1,3}[.)])\s+(.*)")


class _Doc(NamedTuple):
    title: str | None
    headers: dict[str, str]
    blocks: list[tuple[str, str]]  # (section, text) per paragraph or bullet; the title is section "title"


def _parse(text: str) -> _Doc:
    """Split a rendered memory (or free text) into title, header lines and section blocks."""
    title: str | None = None
    headers: dict[str, str] = {}
    blocks: list[tuple[str, str]] = []
    paragraph: list[str] = []
    section, in_bullet = "text", False

    def flush() -> None:
        if paragraph:
            blocks.append((section, " ".join(paragraph)))
            paragraph.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
            in_bullet = False
        elif title is None and (match := _TITLE.fullmatch(line)):
            title = match.group(1).strip() or None
        elif section == "text" and not blocks and not paragraph and (match := _HEADER.fullmatch(line)):
            headers[match.group(1).casefold()] = match.group(2).strip()
        elif match := _HEADING.fullmatch(line):
            flush()
            section, in_bullet = match.group(1).strip().casefold(), False
        elif match := _BULLET.fullmatch(raw):
            flush()
            blocks.append((section, match.group(1).strip()))
            in_bullet = True
        elif in_bullet and raw[:1].isspace():
            blocks[-1] = (section, f"{blocks[-1][1]} {line}")
        else:
            paragraph.append(line)
            in_bullet = False
    flush()
    if title:
        blocks.insert(0, ("title", title))
    return _Doc(title, headers, blocks)


# --- mentions found by pattern -----------------------------------------------------


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

_WORD = re.compile(r"[^\W_][\w'’-]*")
_POSSESSIVE = re.compile(r"['’]s?$")
_OPENERS = " \t\"'([{*•>-–—"


class _Token(NamedTuple):
    start: int
    end: int
    text: str
    fold: str
    cap: bool
    at_start: bool
    joined: bool  # separated from the previous token by spaces only, so the two can form one name


def _tokens(masked: str) -> list[_Token]:
    """Words of the unmasked text; possessives trimmed, contractions dropped."""
    tokens: list[_Token] = []
    previous_end = 0
    for match in _WORD.finditer(masked):
        text = match.group(0).rstrip("-'’")
        if "'" in text or "’" in text:
            text = _POSSESSIVE.sub("", text)
            if "'" in text or "’" in text:
                continue
        gap = masked[previous_end : match.start()]
        at_start = (not tokens and not gap.strip(_OPENERS)) or gap.rstrip().endswith(":")
        joined = bool(tokens) and gap != "" and gap.strip(" \t") == ""
        tokens.append(
            _Token(match.start(), match.start() + len(text), text, text.casefold(), text[0].isupper(), at_start, joined)
        )
        previous_end = match.start() + len(text)
    return tokens


def _known_capital(token: _Token) -> bool:
    """Capitals that stay meaningful in Title Case text: names, technologies, acronyms."""
    fold = token.fold
    return (
        fold in _FIRST_NAMES
        or fold in _TECH
        or fold in _ALIASES
        or fold in _PLACES
        or fold in _ORGANIZATIONS
        or fold in _TECH_FIRST_WORDS
        or token.text.isupper()
    )


def _demote_title_case(tokens: list[_Token], in_title: bool) -> list[_Token]:
    """In "Migrate Session Cache To Redis" capitals carry no meaning: read it lower-case.
    A sentence's first word is capitalised anyway, so it does not count."""
    candidates = [t for t in tokens if len(t.text) > 3 and not _known_capital(t) and not t.at_start]
    capitals = sum(t.cap for t in candidates)
    needed = 1 if in_title else 4
    if capitals < needed or capitals < len(candidates) * (0.5 if in_title else 0.75):
        return tokens
    return [t._replace(cap=False) if t.cap and not _known_capital(t) else t for t in tokens]


def _tech_span(tokens: list[_Token], i: int) -> int | None:
    """End of the longest lexicon technology starting at token i (taking a generic word after it)."""
    longest = 3 if tokens[i].fold in _TECH_FIRST_WORDS else 1
    for length in range(min(longest, len(tokens) - i), 0, -1):
        if not all(tokens[k].joined for k in range(i + 1, i + length)):
            continue
        key = " ".join(t.fold for t in tokens[i : i + length])
        key = _ALIASES.get(key, key)
        if key not in _TECH:
            continue
        first = tokens[i]
        if key in _AMBIGUOUS_TECH and (not first.cap or (first.at_start and first.fold in _STOPWORDS)):
            continue
        end = i + length
        if end < len(tokens) and tokens[end].joined and _singular(tokens[end].fold) in _GENERIC:
            end += 1
        return end
    return None


def _product_end(tokens: list[_Token], end: int) -> int:
    """A technology followed by capitalised words names one product: "Kafka Connect",
    "GitHub Actions", "React Hook Form" are not Kafka, GitHub or React. An acronym after
    it is a thing of its own ("Airflow DAG", "Redis INCR"), unless it is generic ("API")."""
    while (
        end < len(tokens)
        and tokens[end].joined
        and _name_word(tokens[end])
        and not tokens[end].text.isupper()
        and not _tech_span(tokens, end)
    ):
        end += 1
    if end < len(tokens) and tokens[end].joined and tokens[end].cap and tokens[end].fold in _GENERIC:
        end += 1
    return end


def _name_word(token: _Token) -> bool:
    return token.cap and token.text[0].isalpha() and token.fold not in _STOPWORDS and token.fold not in _CALENDAR


def _proper_kind(run: list[_Token], cue: str) -> str | None:
    """Type a capitalised run; None when it is just a sentence-initial word."""
    folds = [t.fold for t in run]
    joined = " ".join(folds)
    if len(run) > 1:
        if folds[-1] in _ORG_SUFFIXES or joined in _ORGANIZATIONS:
            return "organization"
        if folds[0] in _FIRST_NAMES:
            return "person"
        if joined in _PLACES or folds[-1] in _PLACE_SUFFIXES or folds[0] in _PLACE_PREFIXES or cue in _PLACE_CUES:
            return "place"
        return "component" if _singular(folds[-1]) in _COMPONENT_HEADS else "concept"
    if joined in _ORGANIZATIONS:
        return "organization"
    if joined in _PLACES:
        return "place"
    if run[0].text.isupper():
        return "concept" if len(run[0].text) > 1 and joined not in _UNIT_ACRONYMS else None
    if joined in _FIRST_NAMES:
        return "person"
    if run[0].at_start:
        return None
    return "place" if cue in _PLACE_CUES else "concept"


def _head_at(tokens: list[_Token], i: int) -> bool:
    """A lower-case technical head noun, unless the next word is a head too ("cache service")."""
    token = tokens[i]
    if token.cap or _singular(token.fold) not in _HEADS:
        return False
    following = tokens[i + 1] if i + 1 < len(tokens) else None
    return not (following and following.joined and not following.cap and _singular(following.fold) in _HEADS)


_PREFIXES = _words("cross multi non pre post re per sub inter intra self co anti semi well")


def _kebab_kind(token: _Token) -> str | None:
    """A lower-case kebab name: a component when it ends in a component head ("api-gateway",
    "auth-service"), a technology when a part names one ("vitest-axe"); else a compound word."""
    parts = token.fold.split("-")
    if token.cap or len(parts) < 2 or not all(part.isalnum() for part in parts):
        return None
    if parts[0] in _PREFIXES or parts[0] in _STOPWORDS or parts[0] in _WEAK_ADJECTIVES:
        return None
    if _singular(parts[-1]) in _COMPONENT_HEADS:
        return "component"
    return "technology" if any(p in _TECH and p not in _AMBIGUOUS_TECH for p in parts) else None


def _sentence_capital(tokens: list[_Token], i: int, end: int) -> bool:
    """A sentence's first word, not itself a known name, before a known name: "Tell Julia
    Novak", "Ask Nora" (a bullet's verb rather than part of the name)."""
    token = tokens[i]
    return (
        end - i > 1
        and token.at_start
        and not token.text.isupper()
        and not _known_capital(token)
        and _known_capital(tokens[i + 1])
    )


def _modifier(token: _Token) -> bool:
    """A word that can narrow a head noun. Compounds take singular modifiers ("session
    cache"), so a word with a plural -s is a verb or a list ("supports", "misses")."""
    return (
        not token.cap
        and token.text.replace("-", "").isalpha()
        and token.fold not in _STOPWORDS
        and token.fold not in _WEAK_ADJECTIVES
        and token.fold not in _CALENDAR
        and (_singular(token.fold) == token.fold or token.fold in _PLURAL_MODIFIERS)
    )


def _word_mentions(masked: str, in_title: bool) -> list[_Mention]:
    """Technologies, proper nouns and technical noun phrases, left to right in one pass."""
    tokens = _demote_title_case(_tokens(masked), in_title)
    found: list[_Mention] = []
    i, free = 0, 0
    while i < len(tokens):
        token = tokens[i]
        end = _tech_span(tokens, i)
        if end:
            end = _product_end(tokens, end)
            found.append(_mention(token.start, masked[token.start : tokens[end - 1].end], "technology"))
            i = free = end
            continue
        if _name_word(token):
            end = i + 1
            while end < len(tokens) and tokens[end].joined and _name_word(tokens[end]) and not _tech_span(tokens, end):
                end += 1
            if _sentence_capital(tokens, i, end):
                i += 1  # "Ask Nora", "Watch Crashlytics": a verb before the name
                continue
            cue = tokens[i - 1].fold if i and token.joined else ""
            kind = _proper_kind(tokens[i:end], cue) if end - i <= 4 else None
            if kind:
                found.append(_mention(token.start, masked[token.start : tokens[end - 1].end], kind))
            i = free = end
            continue
        kebab = _kebab_kind(token)
        if kebab:
            found.append(_mention(token.start, token.text, kebab))
            i = free = i + 1
            continue
        if _head_at(tokens, i):
            first = i
            while first > max(free, i - 2) and tokens[first].joined and _modifier(tokens[first - 1]):
                first -= 1
            if first < i:
                kind = "component" if _singular(token.fold) in _COMPONENT_HEADS else "concept"
                found.append(_mention(tokens[first].start, masked[tokens[first].start : token.end], kind))
                free = i + 1
        i += 1
    return found


_MAX_SURFACE = 300
"""Longer "names" are runaway matches on degenerate input (a 100 KB word), not entities."""


def _sentence_mentions(sentence: str, in_title: bool) -> tuple[str, list[_Mention]]:
    """All mentions in one sentence, by position, and the masked sentence relations are read from."""
    masked, found = _pattern_mentions(sentence)
    found.extend(_word_mentions(masked, in_title))
    found.sort(key=lambda m: (m.start, m.end))
    return masked, [m for m in found if m.key and len(m.surface) <= _MAX_SURFACE]


# --- stated relations ---------------------------------------------------------------

_WINDOW = 200
_USES = re.compile(r"(?i)\b(?:uses|used(?!\s+by\b)|using|utili[sz]es)\b")
_MOVES = re.compile(r"(?i)\b(?:mov(?:e|es|ed|ing)|migrat(?:e|es|ed|ing|ion)|switch(?:es|ed|ing)?|port(?:ed|ing))\b")
_REPLACES = re.compile(r"(?i)\b(?:replac|supersed)(?:e|es|ed|ing)\b")
_DEPENDS = re.compile(r"(?i)\b(?:depend(?:s|ed|ing)?|rel(?:y|ies|ied|ying))\s+(?:up)?on\b")
_FROM = re.compile(r"(?i)\bfrom\b")
_TO = re.compile(r"(?i)\b(?:to|onto|into)\b")
_BY = re.compile(r"(?i)\s+by\b")
_WITH = re.compile(r"(?i)\b(?:with|by)\b")


class _Mentions:
    """Mentions of one sentence, searchable by position."""

    def __init__(self, mentions: list[_Mention]) -> None:
        self.items = mentions
        self.starts = [m.start for m in mentions]

    def after(self, position: int, limit: int | None = None) -> _Mention | None:
        """First mention starting at or after position (and before limit)."""
        index = bisect_left(self.starts, position)
        if index == len(self.items) or (limit is not None and self.items[index].start >= limit):
            return None
        return self.items[index]

    def before(self, position: int) -> _Mention | None:
        """Nearest mention ending at or before position."""
        index = bisect_left(self.starts, position) - 1
        while index >= 0 and self.items[index].end > position:
            index -= 1
        return self.items[index] if index >= 0 else None


def _moves(masked: str, mentions: _Mentions, trigger: re.Match[str]) -> tuple[_Mention | None, _Mention | None]:
    """ "moving the cache from Memcached to Redis" and "migrate the cache to Redis"."""
    window_end = min(len(masked), trigger.end() + _WINDOW)
    source_from = _FROM.search(masked, trigger.end(), window_end)
    start = source_from.end() if source_from else trigger.end()
    to = _TO.search(masked, start, window_end)
    if not to:
        return None, None
    return mentions.after(start, to.start()), mentions.after(to.end())


def _replaces(masked: str, mentions: _Mentions, trigger: re.Match[str]) -> tuple[_Mention | None, _Mention | None]:
    """ "X was replaced by Y", "replace X with Y", and "Y replaces X"."""
    if _BY.match(masked, trigger.end()):
        return mentions.before(trigger.start()), mentions.after(trigger.end())
    window_end = min(len(masked), trigger.end() + _WINDOW)
    by = _WITH.search(masked, trigger.end(), window_end)
    if by:
        return mentions.after(trigger.end(), by.start()), mentions.after(by.end())
    return mentions.after(trigger.end()), mentions.before(trigger.start())


def _forward(masked: str, mentions: _Mentions, trigger: re.Match[str]) -> tuple[_Mention | None, _Mention | None]:
    """ "X uses Y", "X depends on Y": the nearest mention either side."""
    return mentions.before(trigger.start()), mentions.after(trigger.end())


_Reader = Callable[[str, _Mentions, re.Match[str]], tuple[_Mention | None, _Mention | None]]
_RELATIONS: tuple[tuple[str, re.Pattern[str], _Reader], ...] = (
    ("uses", _USES, _forward),
    ("moved_to", _MOVES, _moves),
    ("replaced_by", _REPLACES, _replaces),
    ("depends_on", _DEPENDS, _forward),
)


def _stated_relations(masked: str, mentions: list[_Mention]) -> list[tuple[str, str, str]]:
    """(source key, relationship, target key) for the relations a sentence states."""
    index = _Mentions(mentions)
    found: list[tuple[str, str, str]] = []
    if masked.rstrip(_TRAIL_PUNCT.replace("?", "")).endswith("?"):
        return found  # "Should we replace X with Y?" asks; it does not state
    for name, pattern, read in _RELATIONS:
        for trigger in pattern.finditer(masked):
            source, target = read(masked, index, trigger)
            if source and target and source.key != target.key:
                found.append((source.key, name, target.key))
    return found


# --- graph assembly -----------------------------------------------------------------


def _trim(text: str, limit: int) -> str:
    """Cut at a word boundary so names and evidence stay readable."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] or text[: limit - 1]
    return cut.rstrip(" ,;:") + "…"


class _Node:
    __slots__ = ("key", "kind", "description", "surfaces", "display")

    def __init__(self, key: str, kind: str, description: str, display: str | None) -> None:
        self.key = key
        self.kind = kind
        self.description = description
        self.surfaces: dict[str, int] = {}
        self.display = display

    def name(self) -> str:
        """The lexicon's spelling for technologies, else the most frequent surface form."""
        if self.display:
            return self.display
        return max(self.surfaces.items(), key=lambda item: item[1])[0] if self.surfaces else self.key


class _Graph:
    """Nodes and edges in first-seen order, so the output is deterministic."""

    def __init__(self, title: str | None) -> None:
        self.title = title
        self.nodes: dict[str, _Node] = {}
        self.edges: dict[tuple[str, str, str], str] = {}

    def node(self, key: str, kind: str, surface: str, description: str) -> str:
        node = self.nodes.get(key)
        if node is None:
            display = _TECH.get(key) if kind == "technology" else None
            node = self.nodes[key] = _Node(key, kind, description, display)
        elif node.kind == "concept":
            node.kind = kind  # a later, more specific reading wins over the fallback type
        surface = " ".join(surface.split())
        node.surfaces[surface] = node.surfaces.get(surface, 0) + 1
        return key

    def edge(self, source: str, relationship: str, target: str, evidence: str = "") -> None:
        if source != target:
            self.edges.setdefault((source, relationship, target), evidence)

    def where(self, section: str) -> str:
        """Node provenance: "Mentioned in decisions of 'Plan 015 …'"."""
        place = {"text": "free text"}.get(section, section)
        return f"Mentioned in {place} of '{self.title}'" if self.title else f"Mentioned in {place}"

    def export(self) -> dict[str, list[dict[str, Any]]]:
        nodes = [
            {"id": n.key, "name": n.name(), "type": n.kind, "description": n.description, "aliases": list(n.surfaces)}
            for n in self.nodes.values()
        ]
        edges = []
        for (source, relationship, target), evidence in self.edges.items():
            text = f"{self.nodes[source].name()} {relationship.replace('_', ' ')} {self.nodes[target].name()}"
            edges.append(
                {
                    "source_node_id": source,
                    "target_node_id": target,
                    "relationship_name": relationship,
                    "description": f'{text}: "{evidence}"' if evidence else text,
                }
            )
        return {"nodes": nodes, "edges": edges}


def _clean(text: str) -> str:
    """NFKC (full-width and ligature forms read as plain text); the mask character is reserved."""
    return unicodedata.normalize("NFKC", text).replace(_MASK, " ")


def _add_header_nodes(graph: _Graph, doc: _Doc) -> str | None:
    """The topic, plan and session nodes; returns the topic's key."""
    if not doc.title:
        return None
    topic = graph.node(f"topic:{normalise(doc.title)}", "topic", doc.title, _topic_description(doc))
    plan = doc.headers.get("plan")
    if plan:
        graph.node(_plan_key(plan), "plan", plan, f"Plan {plan}, which contains the topic '{doc.title}'")
        graph.edge(_plan_key(plan), "contains", topic)
    session = doc.headers.get("session")
    if session:
        key = f"session:{normalise(session)}"
        graph.node(key, "session", session, f"Session {session}, in which '{doc.title}' was recorded")
        graph.edge(topic, "part_of_session", key)
    return topic


def _topic_description(doc: _Doc) -> str:
    facts = [
        f"{label} {doc.headers[key]}"
        for key, label in (("topic id", "topic id"), ("status", "status"))
        if doc.headers.get(key)
    ]
    return f"Memory topic '{doc.title}'" + (f" ({', '.join(facts)})" if facts else "")


def _decision_node(graph: _Graph, text: str) -> str:
    """A decision is keyed by a hash of its text, so restating it elsewhere meets the same node."""
    digest = hashlib.sha1(normalise(text).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    origin = f"Decision recorded in '{graph.title}'" if graph.title else "Decision recorded in a memory"
    return graph.node(f"decision:{digest}", "decision", _trim(text, 120), origin)


@functools.lru_cache(maxsize=256)
def query_names(text: str) -> tuple[tuple[str, str], ...]:
    """The (name, type) of every entity a query names. Cached: one retrieval asks for the same
    query's names from the graph lane and from abstention, and agents repeat their queries."""
    return tuple((node["name"], node["type"]) for node in extract_graph(text)["nodes"])


def extract_graph(text: str) -> dict[str, list[dict[str, Any]]]:
    """The knowledge graph of one memory document (or free text), as cognee's LLM would return it.

    Nodes: {"id", "name", "type", "description", "aliases"}; edges: {"source_node_id",
    "target_node_id", "relationship_name", "description"}. Same text, same output.
    """
    doc = _parse(_clean(text))
    graph = _Graph(doc.title)
    topic = _add_header_nodes(graph, doc)
    for section, block in doc.blocks:
        decision = _decision_node(graph, block) if section.startswith("decision") else None
        if decision and topic:
            graph.edge(topic, "decided", decision)
        for sentence in sentences(block):
            masked, mentions = _sentence_mentions(sentence, section == "title")
            for mention in mentions:
                key = graph.node(mention.key, mention.kind, mention.surface, graph.where(section))
                if topic:
                    graph.edge(topic, "mentions", key)
                if decision:
                    graph.edge(decision, "about", key)
            for source, relationship, target in _stated_relations(masked, mentions):
                graph.edge(source, relationship, target, _trim(sentence, 160))
    return graph.export()


def summarize(text: str) -> str:
    """A short deterministic summary in place of the LLM's: the gist plus the decisions.

    A memory gives "Title: first sentence of the context" and its decisions as bullets;
    free text gives its first two sentences. At most 600 characters.
    """
    doc = _parse(_clean(text))
    body = [block for section, block in doc.blocks if section != "title"]
    context = [block for section, block in doc.blocks if section == "context"] or body
    if doc.title:
        lead = sentences(context[0])[0] if context else ""
        head = f"{doc.title}: {lead}" if lead else doc.title
    else:
        lead_sentences = [s for block in body for s in sentences(block)[:2]][:2]
        head = " ".join(lead_sentences)
    lines = [_trim(head, 600)] if head.strip() else []
    for section, block in doc.blocks:
        if section.startswith("decision"):
            line = f"- {_trim(block, 200)}"
            if sum(len(existing) + 1 for existing in lines) + len(line) > 600:
                break
            lines.append(line)
    return "\n".join(lines)
