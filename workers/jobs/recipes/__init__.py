"""Recipes (a succeeded agent job's actions, replayed with no LLM): the models (``models``), their
``{{param}}`` templates (``templates``), building one from a run (``recording``), checking recipe
jobs (``checks``) and their versions and counters in Redis (``store``)."""
