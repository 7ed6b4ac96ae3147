"""Sentences a person says to a coding agent, labelled for the preference capture (issue 49 item 1): written
BEFORE graph/capture/preference.py's rules and kept out of tuning afterwards (a miss is reported, not fitted).

Labels:
- `preference`: the person's own way of working, true in every project ("I always use uv, never pip",
  "commit messages in the imperative"): a capture may propose it as a *user* memory;
- `project`: a decision or rule of this project, its code, its team ("We use Postgres for the ledger",
  "Never log card numbers"), even where it says always/never/prefer: it stays a project memory;
- `chatter`: requests, thanks, questions, reports of what happened, first-person talk that states no
  habit ("I always forget how this flag works").
Sentences come from the user's turns only: the agent's text is never the person's preference.
"""

from __future__ import annotations

PREFERENCE = "preference"
PROJECT = "project"
CHATTER = "chatter"

SENTENCES: list[tuple[str, str]] = [
    # -- the person's own way of working --------------------------------------------------------------
    ("I always use uv, never pip.", PREFERENCE),
    ("I prefer pytest fixtures over setUp methods.", PREFERENCE),
    ("Commit messages in the imperative, please.", PREFERENCE),
    ("Never use pip for me, always uv.", PREFERENCE),
    ("I like small commits, one change each.", PREFERENCE),
    ("I'd rather you use ripgrep than grep when searching.", PREFERENCE),
    ("Please never add emojis to my commit messages.", PREFERENCE),
    ("I never use tabs; four spaces everywhere.", PREFERENCE),
    ("I usually write the test first and then the code.", PREFERENCE),
    ("My commit messages are always in the imperative mood.", PREFERENCE),
    ("Always ask me before you push anything.", PREFERENCE),
    ("I prefer short answers without a summary at the end.", PREFERENCE),
    ("Don't ever use sudo in the commands you suggest to me.", PREFERENCE),
    ("I want type hints on every function I write.", PREFERENCE),
    ("From now on, always explain a change in one sentence before making it.", PREFERENCE),
    ("I hate long docstrings; keep them to one line.", PREFERENCE),
    ("I use vim keybindings, so give me vim commands when I ask about editing.", PREFERENCE),
    ("My preference is f-strings over format() in Python.", PREFERENCE),
    ("I always rebase instead of merging my branches.", PREFERENCE),
    ("Write British English in everything you draft for me.", PREFERENCE),
    ("I tend to squash my commits before opening a pull request.", PREFERENCE),
    ("In all my projects I use black with a line length of 100.", PREFERENCE),
    # -- decisions and rules of this project ----------------------------------------------------------
    ("We decided to use Postgres for the ledger.", PROJECT),
    ("Let's use uv in this repository.", PROJECT),
    ("This project always uses tabs for indentation.", PROJECT),
    ("Never log card numbers, not even masked.", PROJECT),
    ("Always validate the webhook signature before parsing the body.", PROJECT),
    ("We prefer Redis over Memcached for the session cache.", PROJECT),
    ("The API must never return raw SQL errors to clients.", PROJECT),
    ("Our commit messages follow Conventional Commits in this repo.", PROJECT),
    ("Switch the billing service to gRPC.", PROJECT),
    ("Let's pin numpy to 1.26 until the build is fixed.", PROJECT),
    ("The team agreed to squash merge every pull request here.", PROJECT),
    ("Use the retry helper in payments/retry.py for every outbound call.", PROJECT),
    ("I decided we should keep the ledger in Postgres.", PROJECT),
    ("For this service, always set a timeout on HTTP calls.", PROJECT),
    ("I prefer that this module stays free of Django imports.", PROJECT),
    ("Store the receipts in S3 rather than on disk.", PROJECT),
    ("We never deploy on Fridays.", PROJECT),
    ("Keep the worker's memory limit at 512 MB.", PROJECT),
    # -- chatter -------------------------------------------------------------------------------------
    ("Thanks, that works now.", CHATTER),
    ("Can you run the tests again?", CHATTER),
    ("I always forget how this flag works.", CHATTER),
    ("I never got that error before today.", CHATTER),
    ("I always thought Redis was single-threaded.", CHATTER),
    ("Do I always need to restart the server after a change?", CHATTER),
    ("I prefer not to look at that right now.", CHATTER),
    ("I think the build is broken on main.", CHATTER),
    ("Store what we decided in flowbaby.", CHATTER),
    ("I usually see this when the cache is cold, but not today.", CHATTER),
    ("Please open the file and show me the failing line.", CHATTER),
    ("I like this approach, go ahead.", CHATTER),
    ("I'm never sure which config file wins.", CHATTER),
    ("Great, I'll check it in the morning.", CHATTER),
    ("I used pip yesterday and it broke my environment.", CHATTER),
    ("Why does it always time out on CI?", CHATTER),
]

HELD_OUT: list[tuple[str, str]] = [
    # Written with SENTENCES, before the rules, and never looked at while tuning them: the honest figure.
    ("I always run the formatter before I commit.", PREFERENCE),
    ("Never suggest poetry to me; I use uv for every project.", PREFERENCE),
    ("I prefer named arguments when a call has more than two.", PREFERENCE),
    ("Please always show me the diff before applying it.", PREFERENCE),
    ("My rule is one assertion per test.", PREFERENCE),
    ("I'd prefer you answer in German.", PREFERENCE),
    ("I like my branch names prefixed with my initials.", PREFERENCE),
    ("We always run the migrations before the deploy.", PROJECT),
    ("Let's never call the payments API from the frontend.", PROJECT),
    ("This repository uses pnpm, not npm.", PROJECT),
    ("The ledger service prefers idempotency keys on every write.", PROJECT),
    ("Use Kafka for the billing events.", PROJECT),
    ("I decided the cache TTL is 300 seconds.", PROJECT),
    ("I always wondered why the build takes so long.", CHATTER),
    ("Could you always check that for me next time?", CHATTER),
    ("I never liked that library, but it works.", CHATTER),
    ("Sure, use whatever you think is best.", CHATTER),
    ("I usually get this warning on my laptop.", CHATTER),
]
