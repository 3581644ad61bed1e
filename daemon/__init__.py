"""The daemon's front: the HTTP API (``daemon.api``), the ``browserd`` CLI (``daemon.cli``) and the
demo (``daemon.demo``). Job state lives in the job kernel, ``workers.jobs``, which the API and the
workers share.

Nothing is imported here, on purpose: each front loads only what it serves.
"""
