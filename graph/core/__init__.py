"""What every side of the engine shares: the contract, the workspace and its settings,
the SQLite store and ledger, the audit log, logging and the graph projection file.
Nothing here imports cognee, LanceDB or a model."""
