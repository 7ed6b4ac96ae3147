"""Thin fronts over graph.service: the JSON-RPC stdio bridge and the command line."""
