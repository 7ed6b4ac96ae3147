"""Reading and drawing a workspace's graph for people: counts, neighbourhoods,
paths, exports (GraphML, node-link JSON, a self-contained HTML page) and PNGs.
Reads without the workspace lock."""
