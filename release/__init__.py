"""What `make dist` runs: never installed (the wheel holds bridge, graph, api and flowbaby only)."""
