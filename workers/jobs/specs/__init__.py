"""Checking what users submit: job specs and batches (``checks``), a batch body's accepted forms
(``batch_body``, pure), output schemas' bounds (``schema_limits``) and checking data against them
(``output``: jsonschema with a linear-time regex engine, in a thread, within a deadline)."""
