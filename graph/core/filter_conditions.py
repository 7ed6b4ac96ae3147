"""The conditions that narrow a memory filter (listMemories, forgetMemory's filter; INGEST_CONTRACT.md
20.1), named once for the contract's MemoryFilter and the command line's options. This module imports
nothing, so `flowbaby memories` builds its options without loading the contract (pydantic) first."""

FILTER_CONDITIONS = (
    "status",
    "topicIdPrefix",
    "agentName",
    "createdAfter",
    "createdBefore",
    "updatedAfter",
    "updatedBefore",
    "text",
)
"""The fields of a MemoryFilter that narrow it (allVersions only says how)."""
