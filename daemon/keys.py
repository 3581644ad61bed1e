"""Every Redis key browserd's job store uses, in one place.

The layout (``P`` is the prefix, ``browserd:`` by default; nothing else lives under it):

==============================  =========  ============================================================
key                             type       holds
==============================  =========  ============================================================
``P job:{id}``                  hash       the job record (fields: see ``daemon.records.JOB_FIELDS``);
                                           expires ``result_ttl`` after the job finishes
``P job:{id}:events``           stream     one entry per step and per state change: fields ``type``
                                           (``state`` | ``step`` | ``cancel_requested``) and ``data``
                                           (JSON); expires with the record
``P idem:{key}``                string     idempotency key -> job id (SET NX semantics, in the create
                                           script); expires ``result_ttl`` after creation/finish
``P jobs:seq``                  string     counter; a job's ``seq`` orders listings and is its score
``P jobs:all``                  zset       every job id, score ``seq``
``P jobs:state:{state}``        zset       job ids in that state, score ``seq``
``P jobs:label:{k}:{v}``        zset       job ids carrying label k=v (k percent-encoded), score ``seq``
``P workers``                   zset       worker id -> time of its last heartbeat (epoch seconds)
``P worker:{id}``               hash       that worker's host, pid, concurrency, jobs running; short TTL
``P batch:{id}``                hash       a batch (``daemon.batches``): total, created_at, schedule,
                                           webhook_url, finished_at, and one counter per state: when a
                                           job record has a ``batch`` field, every state transition
                                           does ``HINCRBY`` -1 on the old state's field and +1 on the
                                           new one, atomically; expires ``result_ttl`` after completion
``P batch:{id}:jobs``           list       the batch's job ids in submission order; expires with it
``P batches``                   zset       batch ids, score creation time
``P schedule:{id}``             hash       a schedule (``daemon.schedules``): spec JSON, runs, skipped,
                                           last_batch, last_run_at
``P schedules``                 zset       schedule ids, score creation time
``P schedule:{id}:runs``        zset       the schedule's batch ids (its runs), score creation time
``P redbeat:*``                 various    RedBeat's schedule entries, due-time zset and beat lock
==============================  =========  ============================================================

Index sets are not expired with the records they point to; readers drop ids whose record is gone.
The transition scripts in ``daemon.lua`` build these names from the prefix themselves, so a new key
family belongs both here and there.
"""

from __future__ import annotations

from urllib.parse import quote

DEFAULT_PREFIX = "browserd:"


class Keys:
    """Key names under one prefix (tests and side-by-side deployments use their own)."""

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        self.prefix = prefix

    def job(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}"

    def events(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}:events"

    def idempotency(self, key: str) -> str:
        return f"{self.prefix}idem:{key}"

    @property
    def seq(self) -> str:
        return f"{self.prefix}jobs:seq"

    @property
    def all_jobs(self) -> str:
        return f"{self.prefix}jobs:all"

    def state_index(self, state: str) -> str:
        return f"{self.prefix}jobs:state:{state}"

    def label_index(self, key: str, value: str) -> str:
        return f"{self.prefix}jobs:label:{quote(key, safe='')}:{value}"

    @property
    def workers(self) -> str:
        return f"{self.prefix}workers"

    def worker(self, worker_id: str) -> str:
        return f"{self.prefix}worker:{worker_id}"

    def batch(self, batch_id: str) -> str:
        return f"{self.prefix}batch:{batch_id}"
