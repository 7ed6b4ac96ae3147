"""Thin fronts over graph.api: the JSON-RPC stdio bridge and the command line."""
