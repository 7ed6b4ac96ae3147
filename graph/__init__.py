"""flowbaby's engine: contract, durable staging, background graph building, retrieval."""

__version__ = "0.1.0"
