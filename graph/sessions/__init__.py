"""Session memory: the agents' own session histories (OpenCode, Claude Code), indexed for search."""
