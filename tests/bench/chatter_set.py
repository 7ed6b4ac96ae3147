"""Captured sessions with chatter (issue 50, item 4): a labelled set written BEFORE the capture rules
were tuned, and kept out of tuning afterwards.

Each session is what a capture reads: the user's and the agent's text, and, where the agent stored a
memory itself, its `flowbaby_storeMemory` call (the tool name as Claude Code or OpenCode writes it)
with the summary it sent and the reply. Labels:
- `decisions`: the decisions stated in the session that a capture must keep, as stated;
- `chatter`: lines a capture must NOT keep as decisions: requests to store, acknowledgements, talk
  about flowbaby or memory itself;
- `stored`: decisions the session already stored through its own storeMemory call: a capture must
  not make a second memory of them (they are also left out of `decisions`).
Decisions deliberately use the words chatter uses ("store", "save", "record", "memory", "remember").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CLAUDE_STORE = "mcp__flowbaby__flowbaby_storeMemory"
OPENCODE_STORE = "flowbaby_flowbaby_storeMemory"


@dataclass
class StoreCall:
    """The agent's own storeMemory call: the tool name, what it sent, the topicId the reply named."""

    tool: str
    summary: dict[str, Any]
    topic_id: str


@dataclass
class ChatterSession:
    name: str
    turns: list[tuple[str, str] | StoreCall]
    decisions: list[str] = field(default_factory=list)
    chatter: list[str] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)


SESSIONS: list[ChatterSession] = [
    ChatterSession(
        "help width, stored by the agent",
        [
            (
                "user",
                "We decided to cap the help output at 100 columns instead of 80. Store what we decided in flowbaby.",
            ),
            StoreCall(
                CLAUDE_STORE,
                {
                    "topic": "Help text width",
                    "context": "CLI help formatting.",
                    "decisions": ["Cap the help output at 100 columns instead of 80"],
                },
                "help-text-width",
            ),
            ("assistant", "Stored the decision in flowbaby."),
        ],
        chatter=["Store what we decided in flowbaby.", "Stored the decision in flowbaby."],
        stored=["We decided to cap the help output at 100 columns instead of 80."],
    ),
    ChatterSession(
        "retries, agent promises to save",
        [
            ("user", "Let's retry failed webhooks 5 times with exponential backoff."),
            ("assistant", "Good call. I'll save this to memory so the next session knows."),
            ("assistant", "I will update src/webhooks.py with the retry count."),
        ],
        decisions=["Let's retry failed webhooks 5 times with exponential backoff."],
        chatter=["I'll save this to memory so the next session knows."],
    ),
    ChatterSession(
        "receipts in S3 (the decision says store)",
        [
            ("user", "We decided to store uploaded receipts in S3, not on the app servers."),
            ("user", "Please remember this decision in flowbaby."),
            ("assistant", "Noted, the decision is saved in memory."),
        ],
        decisions=["We decided to store uploaded receipts in S3, not on the app servers."],
        chatter=["Please remember this decision in flowbaby.", "Noted, the decision is saved in memory."],
    ),
    ChatterSession(
        "preferences in local storage, OpenCode store call paraphrased",
        [
            ("user", "Let's save user preferences in local storage instead of cookies. Record that decision."),
            StoreCall(
                OPENCODE_STORE,
                {
                    "topic": "User preference storage",
                    "context": "Where the web app keeps preferences.",
                    "decisions": ["Keep user preferences in browser local storage, not cookies"],
                },
                "user-preference-storage",
            ),
            ("assistant", "I've recorded the decision in flowbaby under the topic User preference storage."),
        ],
        chatter=[
            "Record that decision.",
            "I've recorded the decision in flowbaby under the topic User preference storage.",
        ],
        stored=["Let's save user preferences in local storage instead of cookies."],
    ),
    ChatterSession(
        "audit table, two decisions, one stored",
        [
            ("user", "We will record audit events in a separate Postgres table."),
            ("user", "Also, let's keep audit rows for 400 days."),
            ("user", "Let's store the first one in memory."),
            StoreCall(
                CLAUDE_STORE,
                {
                    "topic": "Audit events table",
                    "context": "Where audit events go.",
                    "decisions": ["Record audit events in their own Postgres table"],
                },
                "audit-events-table",
            ),
            ("assistant", "Done, I saved the audit table decision to flowbaby."),
        ],
        decisions=["Also, let's keep audit rows for 400 days."],
        chatter=["Let's store the first one in memory.", "Done, I saved the audit table decision to flowbaby."],
        stored=["We will record audit events in a separate Postgres table."],
    ),
    ChatterSession(
        "worker memory limit (the word memory in a decision)",
        [
            ("user", "Let's keep the memory limit of the export worker at 512 MB."),
            ("assistant", "I'll add this to the project memory."),
            ("assistant", "Saved to flowbaby."),
        ],
        decisions=["Let's keep the memory limit of the export worker at 512 MB."],
        chatter=["I'll add this to the project memory.", "Saved to flowbaby."],
    ),
    ChatterSession(
        "talk about flowbaby itself",
        [
            ("user", "From now on, always store our decisions in flowbaby at the end of a session."),
            ("user", "Let's check what flowbaby remembers about the payout schedule."),
            ("assistant", "Flowbaby has a memory about weekly payouts; I will follow it."),
            ("user", "We decided to pay merchants out daily from next month."),
        ],
        decisions=["We decided to pay merchants out daily from next month."],
        chatter=[
            "From now on, always store our decisions in flowbaby at the end of a session.",
            "Let's check what flowbaby remembers about the payout schedule.",
            "Flowbaby has a memory about weekly payouts; I will follow it.",
        ],
    ),
    ChatterSession(
        "money as cents, acknowledgement restating the decision",
        [
            ("user", "Always store money as integer cents, never floats."),
            ("user", "Save this decision to flowbaby please."),
            ("assistant", "Got it, I'll remember that we decided on integer cents."),
        ],
        decisions=["Always store money as integer cents, never floats."],
        chatter=["Save this decision to flowbaby please.", "Got it, I'll remember that we decided on integer cents."],
    ),
    ChatterSession(
        "session state, stored under Claude Code",
        [
            ("user", "We'll persist the checkout session state in Redis with a 30 minute expiry."),
            ("user", "Let's write this down in memory."),
            StoreCall(
                CLAUDE_STORE,
                {
                    "topic": "Checkout session state",
                    "context": "Where checkout sessions live.",
                    "decisions": ["Persist checkout session state in Redis, expiring after 30 minutes"],
                },
                "checkout-session-state",
            ),
            ("assistant", "The memory was updated with the new decision."),
        ],
        chatter=["Let's write this down in memory.", "The memory was updated with the new decision."],
        stored=["We'll persist the checkout session state in Redis with a 30 minute expiry."],
    ),
    ChatterSession(
        "no chatter at all",
        [
            ("user", "Let's switch the dashboard charts from Chart.js to ECharts."),
            ("assistant", "I will migrate the three charts in web/charts/ first."),
            ("user", "We decided to drop IE11 support in the same release."),
        ],
        decisions=[
            "Let's switch the dashboard charts from Chart.js to ECharts.",
            "We decided to drop IE11 support in the same release.",
        ],
    ),
    ChatterSession(
        "agent narrates its own storing",
        [
            ("user", "Going forward we deploy on Tuesdays and Thursdays only."),
            ("assistant", "Let me store this decision first."),
            ("assistant", "I stored it with flowbaby_storeMemory; the decision is now in the workspace memory."),
        ],
        decisions=["Going forward we deploy on Tuesdays and Thursdays only."],
        chatter=[
            "Let me store this decision first.",
            "I stored it with flowbaby_storeMemory; the decision is now in the workspace memory.",
        ],
    ),
    ChatterSession(
        "remembered devices (remember in a decision)",
        [
            ("user", "Let's keep remembered-device tokens for 30 days, then ask for the second factor again."),
            ("user", "We should store this in flowbaby so the next session knows."),
            ("assistant", "Decision stored."),
        ],
        decisions=["Let's keep remembered-device tokens for 30 days, then ask for the second factor again."],
        chatter=["We should store this in flowbaby so the next session knows.", "Decision stored."],
    ),
    ChatterSession(
        "two stores, the second one a later decision",
        [
            ("user", "We decided to use argon2id for password hashing."),
            StoreCall(
                CLAUDE_STORE,
                {
                    "topic": "Password hashing",
                    "context": "How passwords are hashed.",
                    "decisions": ["Hash passwords with argon2id"],
                },
                "password-hashing",
            ),
            ("assistant", "Stored in flowbaby as Password hashing."),
            ("user", "Let's also require 12 characters minimum for new passwords."),
        ],
        decisions=["Let's also require 12 characters minimum for new passwords."],
        chatter=["Stored in flowbaby as Password hashing."],
        stored=["We decided to use argon2id for password hashing."],
    ),
    ChatterSession(
        "storage format decision near store words",
        [
            ("user", "Switch the notes feature to Markdown storage instead of HTML."),
            ("user", "I'd like you to save the decision to memory too."),
            ("assistant", "Okay, I will save the decision to memory once the change is in."),
        ],
        decisions=["Switch the notes feature to Markdown storage instead of HTML."],
        chatter=[
            "I'd like you to save the decision to memory too.",
            "Okay, I will save the decision to memory once the change is in.",
        ],
    ),
]
