"""The agent-side files `flowbaby install` writes: the `flowbaby-memory` skill (Claude Code,
OpenCode) and the Copilot custom agent, following the Flowbaby agent-integration docs."""

from __future__ import annotations

MARKER = "<!-- written by flowbaby install; flowbaby uninstall removes it -->"
"""Files carrying this line are ours to replace or remove; any other file is left alone."""

SKILL = f"""---
name: flowbaby-memory
description: Use the workspace's Flowbaby memory. Retrieve past decisions before reasoning about a task, and store a summary after meaningful progress (a finished task, a decision, a concluded debugging session, the end of a session).
---
{MARKER}

# Flowbaby memory

Flowbaby keeps this workspace's decisions and progress summaries, searchable across sessions and
agents, and indexes this workspace's own agent sessions. Its MCP server (`flowbaby`) offers five tools.

## When to retrieve: `flowbaby_retrieveMemory`
- **Retrieve before reasoning.** At the start of each task, and whenever the user mentions earlier
  work, decisions, plans or bugs, call it with a natural-language description of the goal.
- Build on what you find; quote the markdown narrative when you answer. If nothing relevant comes
  back, say so and proceed from the code.
- Parameters: `query` (required), `maxResults` (1-10, default 3), `maxTokens` (default 2000),
  `includeSuperseded` (default false: replaced versions stay hidden).

## Details of earlier sessions: `flowbaby_searchSessions`
- When you need something no summary kept (an old error message, the tool output that proved a
  theory, the command that finally worked), search the workspace's OpenCode and Claude Code
  sessions: `query` (required), `sessionId` (optional: one session), `limit` (default 10).
  Lower `distance` is better; quote `chunk_text` with its `session_id`.

## When to store: `flowbaby_storeMemory`
- **Store after meaningful progress:** a task finishes, a decision is made, a debugging session
  concludes, or before a hand-off. Think of it as the summary you would give the user.
- **Do not store trivial turns** (clarifications, small talk, one-line answers): fold them into the
  next real summary so retrieval stays precise.
- `context`: 300-1,500 characters on the goal, what was done and the outcome.
- `decisions`: 0-5 concise bullets, with `rationale`, `openQuestions`, `nextSteps`, `references`.
- `metadata.topicId`: reuse the same id to replace an earlier summary of the same topic (the old
  one becomes Superseded); omit it for a new topic. `metadata.planId`, `metadata.status`
  (`Active`, `Superseded`, `DecisionRecord`) are optional.

## Session workflow
1. Start: retrieve context for the task at hand.
2. Work; retrieve again when the user refers to something earlier.
3. After each meaningful step: store one summary.
4. End of session or hand-off: store a recap even if nothing major happened.

## Reading statuses and errors
- A store returns at once with an `operationId`: the memory is staged and becomes searchable after
  background processing (seconds to a minute or two). `flowbaby_backgroundStatus` with that id says
  `pending`, `running`, `completed` or `failed`. Do not block on it unless you must.
- `flowbaby_indexStatus`: `can_search`, `needs_update` (still indexing), `needs_repair`.
- Errors come back as tool errors starting with a code:
  - `INVALID_PAYLOAD` / `INVALID_REQUEST`: fix the field the message names and call again.
  - `429_AGENT_THROTTLED` (`RATE_LIMIT_EXCEEDED`, `QUEUE_FULL`): wait `retryAfterSec`, retry with
    exponential backoff up to about 15 s, and tell the user why you paused.
  - `429_FLOWBABY_BACKLOG`: nothing was stored; retry after `retryAfterSec` (30 s) or fold the summary
    into the next one.
  - `MISSING_API_KEY`: the workspace `.env` needs `LLM_API_KEY` for its LLM provider; tell the user.
  - `NOT_INITIALIZED`, `BRIDGE_TIMEOUT`: retry shortly.
"""

COPILOT_AGENT = f"""---
name: Memory-Aware Code Assistant
description: Copilot assistant with access to workspace memory
tools: ['search', 'flowbaby/*', 'flowbabyStoreSummary', 'flowbabyRetrieveMemory']
---
{MARKER}

You are a code assistant with access to workspace-specific memory (the `flowbaby` MCP server).

When the user asks about past decisions or implementations, and at the start of each task:
1. Use `flowbaby_retrieveMemory` (#flowbabyRetrieveMemory) to search for relevant context
2. Ground your answer in the retrieved memories
3. If no memories exist, use your training data but clarify it's not workspace-specific

When the user completes an important implementation or makes a decision:
1. Store a summary using `flowbaby_storeMemory` (#flowbabyStoreSummary)
2. Include topic, a context of 300-1,500 characters and 0-5 key decisions
3. Do not store trivial turns; fold them into the next substantial summary

On a `429_AGENT_THROTTLED` or `429_FLOWBABY_BACKLOG` error, tell the user, wait the advised time and
retry, or skip a low-priority summary.
"""
