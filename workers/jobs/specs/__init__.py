"""Checking what users submit: job specs and batches (``checks``), a batch body's accepted forms
(``batch_body``, pure), and output schemas (``output``: jsonschema with a linear-time regex engine)."""
