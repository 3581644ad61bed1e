"""Real helpers for the tests: static HTTP servers, process-table checks."""
