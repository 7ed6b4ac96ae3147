"""Retrieval in the owning process: the vector, lexical and graph lanes, their fusion,
the token budget and the retrieval throttle. Never imports cognee."""
