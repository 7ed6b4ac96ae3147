"""One owner per workspace, any number of fronts: the owner's local endpoint and the
client through which every later front (bridge, serve, mcp) works, taking the
workspace over when the owner leaves."""
