"""The `flowbaby` command line: the one place that starts fronts (the bridge, the HTTP API, the MCP
server) and runs the workspace commands (install, demo, graph, sessions, tokens, migrate, connect)."""
