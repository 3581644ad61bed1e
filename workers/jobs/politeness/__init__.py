"""Politeness toward the sites jobs visit: a job's options and limits (``options``, pure), which
site a URL belongs to (``domains``), per-domain slots and navigation spacing in Redis (``slots``),
and robots.txt rules and their cache (``robots``)."""
