"""Batches: many jobs submitted at once and counted together. The models (``models``, pure), their
records, counters, cancelling and results in Redis (``store``), and publishing thousands of job
messages in one round trip (``bulk``)."""
