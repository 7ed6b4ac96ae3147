"""The offline extractor's word lists (technologies and their aliases, noun heads, stop words,
months, first names, places, organisations) and the normalisation that keys every entity
(graph.extract.extractor). Only the standard library is used."""

from __future__ import annotations

import re
import unicodedata


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
