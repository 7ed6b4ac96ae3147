"""The hooks' labelled set (issue 29), written before any tuning of recall or capture.

- MEMORIES: 60 stored memories of one imaginary workspace (a payments web app).
- SESSIONS: 40 scripted agent sessions. Each opens with a prompt that one memory answers (its
  key) or none answers (None); 26 of them then make decisions and edit files, labelled with the
  decisions stated (as said in the session) and the files the agent edited or created.
Prompts paraphrase; they do not copy the memory's wording.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MEMORIES: list[tuple[str, str, str, list[str]]] = [
    # key, topic, context, decisions
    (
        "retry",
        "Card charge retries",
        "How the billing worker handles declined or failed card charges.",
        ["Retry failed card charges 3 times with exponential backoff starting at 30 seconds"],
    ),
    (
        "logs",
        "Log format",
        "The API services' log output format was settled after the incident review.",
        ["Use structured JSON logs with a request_id field on every line"],
    ),
    (
        "db",
        "Primary database",
        "Which database the ledger and accounts live in.",
        ["Use Postgres 16 as the primary database; SQLite only in unit tests"],
    ),
    (
        "orm",
        "Database access layer",
        "How the Python services talk to the database.",
        ["Use SQLAlchemy 2.0 core queries, not the ORM session, in the ledger service"],
    ),
    (
        "migr",
        "Schema migrations",
        "How schema changes are rolled out.",
        ["Write migrations with Alembic and never edit a migration after it merged"],
    ),
    (
        "auth",
        "Login sessions",
        "How users stay logged in on the web app.",
        ["Use short-lived JWT access tokens of 15 minutes with rotating refresh tokens"],
    ),
    (
        "pw",
        "Password hashing",
        "Which algorithm stores user passwords.",
        ["Hash passwords with argon2id, memory cost 64 MiB"],
    ),
    (
        "cache",
        "Response caching",
        "Caching of the product catalogue API.",
        ["Cache catalogue responses in Redis for 5 minutes, keyed by locale"],
    ),
    (
        "queue",
        "Background jobs",
        "Where asynchronous work such as receipts and exports runs.",
        ["Run background jobs on Celery with RabbitMQ as the broker"],
    ),
    (
        "fe",
        "Frontend framework",
        "The customer dashboard's UI stack.",
        ["Build the dashboard in React with TypeScript and Vite"],
    ),
    ("css", "Styling", "How the dashboard is styled.", ["Use Tailwind CSS; no CSS-in-JS libraries"]),
    (
        "state",
        "Frontend state",
        "Client-side state management in the dashboard.",
        ["Use TanStack Query for server state and Zustand for UI state; no Redux"],
    ),
    (
        "tests",
        "Python test runner",
        "How the backend tests are run.",
        ["Run backend tests with pytest and pytest-xdist, 4 workers in CI"],
    ),
    (
        "e2e",
        "Browser tests",
        "End-to-end testing of the dashboard.",
        ["Write browser tests with Playwright against a seeded staging database"],
    ),
    (
        "ci",
        "Continuous integration",
        "Where the CI pipeline runs.",
        ["Run CI on GitHub Actions; merges need green checks and one approval"],
    ),
    (
        "deploy",
        "Deployment",
        "How releases reach production.",
        ["Deploy with Helm to the EKS cluster; production deploys only on Tuesdays and Thursdays"],
    ),
    (
        "flags",
        "Feature flags",
        "How unfinished features are hidden.",
        ["Gate unfinished features behind LaunchDarkly flags named team.feature"],
    ),
    (
        "tz",
        "Timestamps",
        "How times are stored and shown.",
        ["Store every timestamp in UTC; convert to the user's zone only in the UI"],
    ),
    (
        "money",
        "Money amounts",
        "Representation of amounts of money.",
        ["Store money as integer minor units with an ISO 4217 currency code, never floats"],
    ),
    (
        "ids",
        "Public identifiers",
        "What IDs are exposed in URLs and APIs.",
        ["Expose ULIDs publicly; keep integer primary keys internal"],
    ),
    (
        "api",
        "API style",
        "The public API's style and versioning.",
        ["Version the public REST API in the URL path, /v1/, and use cursor pagination"],
    ),
    (
        "errors",
        "API errors",
        "The shape of error responses.",
        ["Return RFC 7807 problem+json bodies for every API error"],
    ),
    (
        "rate",
        "Rate limits",
        "Limits on the public API.",
        ["Limit the public API to 100 requests per minute per API key, with a 429 and Retry-After"],
    ),
    (
        "webhook",
        "Webhook signatures",
        "How outgoing webhooks are authenticated.",
        ["Sign outgoing webhooks with HMAC-SHA256 in the X-Signature header"],
    ),
    (
        "secrets",
        "Secret storage",
        "Where credentials live.",
        ["Keep secrets in AWS Secrets Manager; never in environment files committed to git"],
    ),
    (
        "lint",
        "Python linting",
        "Code style tooling for Python.",
        ["Lint and format Python with Ruff, line length 120; mypy strict on new modules"],
    ),
    (
        "jslint",
        "TypeScript linting",
        "Code style tooling for the frontend.",
        ["Use ESLint with the typescript-eslint strict config and Prettier"],
    ),
    (
        "branch",
        "Branching",
        "The git workflow.",
        ["Trunk-based development with short-lived branches, squash merges only"],
    ),
    ("commits", "Commit messages", "How commits are written.", ["Write commit messages in Conventional Commits style"]),
    ("monitor", "Metrics", "Observability of services.", ["Export Prometheus metrics and build dashboards in Grafana"]),
    ("trace", "Tracing", "Distributed tracing.", ["Instrument services with OpenTelemetry and send traces to Tempo"]),
    (
        "alerts",
        "Alerting",
        "Who is paged and when.",
        ["Page on-call through PagerDuty only for customer-facing SLO burns"],
    ),
    (
        "sentry",
        "Error tracking",
        "Collecting exceptions from the apps.",
        ["Report exceptions to Sentry with a 10 percent sample rate for performance traces"],
    ),
    (
        "email",
        "Transactional email",
        "Receipts and password reset emails.",
        ["Send transactional email through Postmark with templates stored in the repo"],
    ),
    (
        "search",
        "Product search",
        "Search over the product catalogue.",
        ["Use Postgres full-text search for the catalogue; revisit OpenSearch above 1M products"],
    ),
    (
        "files",
        "File uploads",
        "Where uploaded invoices and avatars are stored.",
        ["Upload files straight to S3 with presigned URLs that expire after 10 minutes"],
    ),
    (
        "img",
        "Image resizing",
        "Thumbnails for avatars and product pictures.",
        ["Resize images on the fly with imgproxy behind CloudFront"],
    ),
    (
        "i18n",
        "Translations",
        "Localisation of the dashboard.",
        ["Manage translations with i18next; English and German at launch"],
    ),
    (
        "a11y",
        "Accessibility",
        "Accessibility requirements.",
        ["Meet WCAG 2.1 AA; run axe checks in the Playwright suite"],
    ),
    ("pdf", "Invoice PDFs", "Generating invoices as PDF.", ["Render invoice PDFs with WeasyPrint from HTML templates"]),
    (
        "currency",
        "Exchange rates",
        "Conversion between currencies.",
        ["Fetch exchange rates from the ECB once a day at 16:00 CET and cache them"],
    ),
    (
        "fraud",
        "Fraud checks",
        "Screening of risky payments.",
        ["Hold payments over 5000 euros for manual review when Radar risk is elevated"],
    ),
    (
        "refund",
        "Refund policy",
        "How refunds are processed.",
        ["Refunds over 500 euros need a second approver in the admin tool"],
    ),
    (
        "gdpr",
        "Data deletion",
        "Handling of account deletion requests.",
        ["Delete personal data within 30 days of a request; keep invoices 10 years, pseudonymised"],
    ),
    (
        "backup",
        "Backups",
        "Database backup policy.",
        ["Take nightly Postgres snapshots kept 35 days, and test a restore every quarter"],
    ),
    (
        "pool",
        "Connection pooling",
        "Database connections from the services.",
        ["Put PgBouncer in transaction mode in front of Postgres, pool size 20 per service"],
    ),
    (
        "py",
        "Python version",
        "The runtime of the backend services.",
        ["Run the backend on Python 3.12; upgrade one minor version a year"],
    ),
    ("node", "Node version", "The runtime for the frontend build.", ["Build the frontend with Node 22 LTS"]),
    (
        "docker",
        "Container images",
        "How service images are built.",
        ["Build images from distroless Python bases with multi-stage Dockerfiles"],
    ),
    (
        "infra",
        "Infrastructure as code",
        "How cloud resources are managed.",
        ["Manage AWS resources with Terraform; state in S3 with DynamoDB locking"],
    ),
    ("dns", "DNS and CDN", "Domains and edge caching.", ["Serve the dashboard through CloudFront; DNS in Route 53"]),
    (
        "mobile",
        "Mobile app",
        "Plans for a mobile client.",
        ["Postpone the native mobile app; ship a responsive PWA first"],
    ),
    (
        "pricing",
        "Pricing tiers",
        "Subscription plans offered to merchants.",
        ["Offer three tiers: Starter free up to 100 transactions, Growth, and Enterprise"],
    ),
    (
        "onboard",
        "Merchant onboarding",
        "Verifying new merchants.",
        ["Verify merchants with Stripe Identity before the first payout"],
    ),
    (
        "payout",
        "Payout schedule",
        "When merchants receive their money.",
        ["Pay merchants out weekly on Mondays, with a 7 day rolling reserve for new accounts"],
    ),
    (
        "docs",
        "Developer docs",
        "Documentation for API users.",
        ["Publish API docs with Redoc generated from the OpenAPI spec on every release"],
    ),
    (
        "adr",
        "Architecture decisions",
        "How the team records design decisions.",
        ["Record architecture decisions as ADRs in docs/adr, numbered, one per decision"],
    ),
    (
        "oncall",
        "On-call rotation",
        "Who carries the pager.",
        ["Rotate on-call weekly among backend engineers, handover on Wednesday mornings"],
    ),
    (
        "perf",
        "Performance budget",
        "Targets for API response times.",
        ["Keep p95 latency of the checkout API under 300 ms"],
    ),
    (
        "ws",
        "Realtime updates",
        "Pushing payment status changes to the dashboard.",
        ["Push payment status updates with server-sent events, not WebSockets"],
    ),
]


@dataclass
class Session:
    prompt: str
    answer: str | None
    """The key of the memory that answers the prompt, or None when no memory does."""
    turns: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(role, text, tool, path): the session after the prompt; tool/path for an edit or write."""
    decisions: list[str] = field(default_factory=list)
    """Labels: the decisions stated in the session, as stated."""
    edited: list[str] = field(default_factory=list)
    """Labels: the files the agent edited or created (workspace-relative)."""


def _decide(
    prompt: str, answer: str | None, said: list[tuple[str, str]], edits: list[tuple[str, str]], decisions: list[str]
) -> Session:
    turns = [(role, text, "", "") for role, text in said]
    turns += [("assistant", "", tool, path) for tool, path in edits]
    turns.append(("assistant", "Done: the change is in place.", "", ""))
    return Session(prompt, answer, turns, decisions, [path for _, path in edits])


SESSIONS: list[Session] = [
    _decide(
        "what do we do when a customer's card payment gets declined?",
        "retry",
        [
            ("user", "Let's also email the customer after the final failed retry."),
            ("assistant", "I will add the dunning email to the billing worker."),
        ],
        [("Edit", "billing/worker.py"), ("Write", "billing/templates/dunning.html")],
        ["Let's also email the customer after the final failed retry."],
    ),
    _decide(
        "how should log lines be formatted in the api?",
        "logs",
        [
            ("user", "We will also include the tenant id in every log line from now on."),
            ("assistant", "Added tenant_id to the logging filter."),
        ],
        [("Edit", "app/logging_setup.py")],
        ["We will also include the tenant id in every log line from now on."],
    ),
    _decide(
        "which database engine backs the ledger?",
        "db",
        [
            ("user", "Decision: the read replicas serve the reporting queries only."),
            ("assistant", "I routed the report endpoints to the replica URL."),
        ],
        [("Edit", "reports/db.py"), ("Edit", "config/settings.py")],
        ["Decision: the read replicas serve the reporting queries only."],
    ),
    _decide(
        "how do users stay signed in to the web app?",
        "auth",
        [
            ("user", "We decided to revoke all refresh tokens when a password changes."),
            ("assistant", "Token revocation now runs in the password change handler."),
        ],
        [("Edit", "auth/tokens.py"), ("Write", "tests/test_revocation.py")],
        ["We decided to revoke all refresh tokens when a password changes."],
    ),
    _decide(
        "where do our async jobs like exports run?",
        "queue",
        [
            ("user", "Let's put the CSV exports on their own low-priority queue."),
            ("assistant", "I added an exports queue with a concurrency of 2."),
            ("user", "We should never run exports on the default queue again."),
        ],
        [("Edit", "jobs/celery_app.py"), ("Edit", "jobs/exports.py")],
        [
            "Let's put the CSV exports on their own low-priority queue.",
            "We should never run exports on the default queue again.",
        ],
    ),
    _decide(
        "what's our approach to styling the dashboard?",
        "css",
        [
            ("user", "Going forward we use the Tailwind typography plugin for the help pages."),
            ("assistant", "Installed the plugin and updated the config."),
        ],
        [("Edit", "dashboard/tailwind.config.ts"), ("Edit", "dashboard/package.json")],
        ["Going forward we use the Tailwind typography plugin for the help pages."],
    ),
    _decide(
        "how many parallel workers does the backend test suite use in ci?",
        "tests",
        [
            ("user", "Let's mark the slow integration tests and skip them on pull requests."),
            ("assistant", "Added a slow marker and a nightly job that runs them."),
        ],
        [("Edit", "pytest.ini"), ("Edit", ".github/workflows/ci.yml")],
        ["Let's mark the slow integration tests and skip them on pull requests."],
    ),
    _decide(
        "on which weekdays can we ship to production?",
        "deploy",
        [
            ("user", "We agreed that hotfixes may deploy any day with two approvals."),
            ("assistant", "I documented the hotfix exception in the release guide."),
        ],
        [("Edit", "docs/releasing.md")],
        ["We agreed that hotfixes may deploy any day with two approvals."],
    ),
    _decide(
        "how are amounts of money represented in the code?",
        "money",
        [
            ("user", "Let's use the py-moneyed library for arithmetic on amounts."),
            ("assistant", "Replaced the hand-written helpers with py-moneyed."),
        ],
        [("Edit", "ledger/amounts.py"), ("Edit", "pyproject.toml")],
        ["Let's use the py-moneyed library for arithmetic on amounts."],
    ),
    _decide(
        "what identifiers do we show in public urls?",
        "ids",
        [
            ("user", "We'll prefix public IDs with the object type, like pay_ and cus_."),
            ("assistant", "Prefixes are added by the ID serializer now."),
        ],
        [("Edit", "api/ids.py"), ("Write", "api/tests/test_ids.py")],
        ["We'll prefix public IDs with the object type, like pay_ and cus_."],
    ),
    _decide(
        "how do we paginate list endpoints in the public api?",
        "api",
        [
            ("user", "Decided: page size defaults to 50 and is capped at 200."),
            ("assistant", "Pagination defaults updated."),
        ],
        [("Edit", "api/pagination.py")],
        ["Decided: page size defaults to 50 and is capped at 200."],
    ),
    _decide(
        "what do error responses from our api look like?",
        "errors",
        [
            ("user", "Let's add a stable error code field to every problem response."),
            ("assistant", "Every problem body now carries a code such as card_declined."),
        ],
        [("Edit", "api/errors.py"), ("Edit", "docs/api/errors.md")],
        ["Let's add a stable error code field to every problem response."],
    ),
    _decide(
        "how are outgoing webhooks authenticated?",
        "webhook",
        [
            ("user", "We will rotate the webhook signing secret every 90 days."),
            ("assistant", "Added a rotation job that keeps the old secret valid for 24 hours."),
        ],
        [("Write", "webhooks/rotation.py"), ("Edit", "webhooks/signing.py")],
        ["We will rotate the webhook signing secret every 90 days."],
    ),
    _decide(
        "where are credentials supposed to be kept?",
        "secrets",
        [
            ("user", "From now on local development reads secrets from a gitignored .env.local file."),
            ("assistant", "Updated the settings loader and the gitignore."),
        ],
        [("Edit", "config/settings.py"), ("Edit", ".gitignore")],
        ["From now on local development reads secrets from a gitignored .env.local file."],
    ),
    _decide(
        "what's the python line length limit?",
        "lint",
        [
            ("user", "Let's switch the import sorting to Ruff as well and drop isort."),
            ("assistant", "isort removed; Ruff's I rules enabled."),
        ],
        [("Edit", "pyproject.toml"), ("Edit", ".pre-commit-config.yaml")],
        ["Let's switch the import sorting to Ruff as well and drop isort."],
    ),
    _decide(
        "how do we merge branches?",
        "branch",
        [
            ("user", "We decided branches older than a week get closed automatically."),
            ("assistant", "Added a stale-branch workflow."),
        ],
        [("Write", ".github/workflows/stale.yml")],
        ["We decided branches older than a week get closed automatically."],
    ),
    _decide(
        "which tool do we use for metrics dashboards?",
        "monitor",
        [
            ("user", "Let's keep the Grafana dashboards as JSON in the repo and provision them."),
            ("assistant", "Dashboards exported to ops/grafana and provisioned on deploy."),
        ],
        [("Write", "ops/grafana/checkout.json"), ("Edit", "ops/grafana/provisioning.yaml")],
        ["Let's keep the Grafana dashboards as JSON in the repo and provision them."],
    ),
    _decide(
        "who gets paged and for what?",
        "alerts",
        [
            ("user", "We agreed the secondary on-call is paged after 15 minutes without an ack."),
            ("assistant", "Escalation policy updated in the Terraform module."),
        ],
        [("Edit", "infra/pagerduty.tf")],
        ["We agreed the secondary on-call is paged after 15 minutes without an ack."],
    ),
    _decide(
        "which service sends our receipts by email?",
        "email",
        [
            ("user", "Let's send receipts from receipts@ and password resets from security@."),
            ("assistant", "Sender addresses split per template."),
        ],
        [("Edit", "notifications/email.py"), ("Edit", "notifications/templates/receipt.html")],
        ["Let's send receipts from receipts@ and password resets from security@."],
    ),
    _decide(
        "how do uploaded invoices get stored?",
        "files",
        [
            ("user", "We decided to scan every upload with ClamAV before it becomes visible."),
            ("assistant", "Uploads now land in a quarantine prefix until the scan passes."),
        ],
        [("Write", "uploads/scan.py"), ("Edit", "uploads/views.py")],
        ["We decided to scan every upload with ClamAV before it becomes visible."],
    ),
    _decide(
        "how are invoice pdfs produced?",
        "pdf",
        [
            ("user", "Let's embed the merchant logo as an inline SVG in the invoice template."),
            ("assistant", "The template now inlines the logo."),
        ],
        [("Edit", "invoices/templates/invoice.html")],
        ["Let's embed the merchant logo as an inline SVG in the invoice template."],
    ),
    _decide(
        "when do refunds need a second person to approve?",
        "refund",
        [
            ("user", "We will log every refund approval to the audit table with both approvers."),
            ("assistant", "Audit rows are written in the approval transaction."),
        ],
        [("Edit", "admin/refunds.py"), ("Write", "migrations/versions/0042_refund_audit.py")],
        ["We will log every refund approval to the audit table with both approvers."],
    ),
    _decide(
        "how long are database backups kept?",
        "backup",
        [
            ("user", "Let's copy the weekly snapshot to a second region as well."),
            ("assistant", "Cross-region copy configured for the Sunday snapshot."),
        ],
        [("Edit", "infra/backups.tf")],
        ["Let's copy the weekly snapshot to a second region as well."],
    ),
    _decide(
        "what python version do the services run on?",
        "py",
        [
            ("user", "We decided to pin the patch version in the Docker base image."),
            ("assistant", "Base image pinned to python 3.12.7."),
        ],
        [("Edit", "docker/Dockerfile.api")],
        ["We decided to pin the patch version in the Docker base image."],
    ),
    _decide(
        "when do merchants get paid out?",
        "payout",
        [
            ("user", "Going forward payouts below 10 euros roll over to the next week."),
            ("assistant", "Minimum payout threshold added."),
        ],
        [("Edit", "payouts/schedule.py"), ("Edit", "docs/merchants/payouts.md")],
        ["Going forward payouts below 10 euros roll over to the next week."],
    ),
    _decide(
        "what tech do we use to push live payment status to the dashboard?",
        "ws",
        [
            ("user", "Let's send a heartbeat comment every 20 seconds on the event stream."),
            ("assistant", "Heartbeat added to the SSE endpoint."),
        ],
        [("Edit", "api/events.py")],
        ["Let's send a heartbeat comment every 20 seconds on the event stream."],
    ),
    # prompts only: answerable
    Session("how do we check the exchange rate for foreign currency orders?", "currency"),
    Session("are large risky payments held for review?", "fraud"),
    Session("how fast must the checkout api answer?", "perf"),
    Session("where do we write down architecture decisions?", "adr"),
    Session("are we building a native ios app?", "mobile"),
    Session("which languages does the dashboard support at launch?", "i18n"),
    # prompts only: unanswerable
    Session("what is the capital of mongolia?", None),
    Session("write a haiku about autumn leaves", None),
    Session("explain the difference between a list and a tuple in python", None),
    Session("how do I center a div with flexbox?", None),
    Session("what's a good name for a pet hamster?", None),
    Session("summarise the plot of moby dick in two sentences", None),
    Session("convert 72 fahrenheit to celsius", None),
    Session("what does the unix command tee do?", None),
]

EXTRA_ANSWERABLE: list[tuple[str, str]] = [
    ("which algorithm do we hash user passwords with?", "pw"),
    ("how long are catalogue api responses cached?", "cache"),
    ("what ui library is the merchant dashboard written in?", "fe"),
    ("do we use redux for state in the frontend?", "state"),
    ("what do we use for end to end browser testing?", "e2e"),
    ("how are half-finished features hidden from users?", "flags"),
    ("in which timezone are timestamps stored?", "tz"),
    ("what are the request limits of the public api per key?", "rate"),
    ("how should commit messages be written?", "commits"),
    ("how do we trace requests across services?", "trace"),
    ("what sample rate do we use for exception performance traces?", "sentry"),
    ("is the product search using opensearch?", "search"),
    ("how are thumbnails generated for product images?", "img"),
    ("what accessibility standard must the dashboard meet?", "a11y"),
    ("how long do we keep invoices after an account deletion request?", "gdpr"),
    ("what pool size does pgbouncer use per service?", "pool"),
    ("which node version builds the frontend?", "node"),
    ("what base image do our docker builds use?", "docker"),
    ("where is the terraform state stored?", "infra"),
    ("what subscription plans do merchants get?", "pricing"),
    ("how are new merchants verified before they are paid?", "onboard"),
    ("how are the api docs published?", "docs"),
    ("when is the on-call handover?", "oncall"),
    ("how are schema migrations written and may we edit old ones?", "migr"),
    ("do we use the sqlalchemy orm session in the ledger?", "orm"),
]

EXTRA_UNANSWERABLE: list[str] = [
    "what is the airspeed velocity of an unladen swallow?",
    "recommend a good science fiction novel",
    "how many bones are in the human hand?",
    "what's the weather usually like in lisbon in march?",
    "tell me a joke about compilers",
    "who painted the girl with a pearl earring?",
    "how do you say thank you in japanese?",
    "what is the boiling point of water at high altitude?",
    "give me a recipe for banana bread",
    "what year did the berlin wall fall?",
    "how do vaccines train the immune system?",
    "what is the tallest mountain in africa?",
]
