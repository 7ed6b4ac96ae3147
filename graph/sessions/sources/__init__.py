"""Read-only adapters over the agent clients' own session stores."""
