"""The offline extractor: entities and relations from a summary's structure and text,
with no LLM. The worker answers cognee's extraction prompts with it, and the graph
lane reads a query's entities with it."""
