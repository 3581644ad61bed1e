"""Scheduled crawls: what a schedule is (``models``), its timing in Celery beat (``beat``), and its
record and runs in Redis (``store``); each run is a batch."""
