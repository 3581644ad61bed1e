"""Interactive sessions (``/v1/sessions``, the MCP tools): what travels (``models``), their errors
(``errors``), and their records, command lists and replies in Redis (``store``)."""
