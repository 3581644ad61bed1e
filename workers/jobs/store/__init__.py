"""Where a job's state lives: Redis. The job store (``jobs``: ``JobStore``), its connection
(``connection``), every key (``keys``), the job record's fields (``codec``), the Lua scripts
(``scripts`` and ``lua/*.lua``), typed transition outcomes (``outcomes``) and event streams as
server-sent events (``streams``)."""
