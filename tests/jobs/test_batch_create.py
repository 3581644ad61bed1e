"""A large batch's jobs recorded in rounds (``BatchStore.create``, real redis-server): the script
answers only the items that made no job, so the ids and the created flags the store hands back
must still line up with the specs in every round and script call; the batch counts and lists
exactly the jobs it made."""

from __future__ import annotations

from workers.jobs.batches.store import CREATE_CHUNK, PIPELINE_CALLS, BatchStore
from workers.jobs.ids import is_id
from workers.jobs.model.spec import JobSpec
from workers.jobs.store.jobs import JobStore

JOBS = CREATE_CHUNK * PIPELINE_CALLS + CREATE_CHUNK + 7  # two rounds, the last script call a partial one


async def test_ids_and_duplicates_line_up_across_rounds_and_calls(store: JobStore) -> None:
    earlier = {key: (await store.create(JobSpec(task=key, idempotency_key=key), max_steps=3)).job_id
               for key in ("k-first", "k-chunk", "k-round", "k-last")}
    keyed = {0: "k-first", CREATE_CHUNK + 1: "k-chunk", CREATE_CHUNK * PIPELINE_CALLS + 3: "k-round",
             JOBS - 1: "k-last", 42: "new-key", 2 * CREATE_CHUNK + 9: "new-key"}  # the second use of a new key too
    specs = [JobSpec(task=f"t{n}", idempotency_key=keyed.get(n)) for n in range(JOBS)]
    made = await BatchStore(store).create(specs, [3] * JOBS)

    assert len(made.job_ids) == len(made.created) == JOBS
    duplicates = {n for n, new in enumerate(made.created) if not new}
    assert duplicates == {0, CREATE_CHUNK + 1, CREATE_CHUNK * PIPELINE_CALLS + 3, JOBS - 1, 2 * CREATE_CHUNK + 9}
    for n in (0, CREATE_CHUNK + 1, CREATE_CHUNK * PIPELINE_CALLS + 3, JOBS - 1):
        assert made.job_ids[n] == earlier[keyed[n]]
    assert made.job_ids[2 * CREATE_CHUNK + 9] == made.job_ids[42]
    fresh = [job_id for job_id, new in zip(made.job_ids, made.created, strict=True) if new]
    assert len(set(fresh)) == len(fresh) == JOBS - 5 and all(is_id(job_id) for job_id in fresh)
    # Each new job is the spec at its place; the batch counts and lists those, not the duplicates.
    for n in (1, 42, CREATE_CHUNK, CREATE_CHUNK * PIPELINE_CALLS, JOBS - 2):
        record = await store.get(made.job_ids[n])
        assert record is not None and record.spec is not None and record.spec.task == f"t{n}"
        assert record.batch == made.batch_id
    batch = await BatchStore(store).get(made.batch_id)
    assert batch is not None and batch.total == JOBS - 5 and batch.duplicates == 5
    assert batch.counts.queued == JOBS - 5
    listed = await store.redis.lrange(store.keys.batch_jobs(made.batch_id), 0, -1)
    assert len(listed) == JOBS  # every item's job, as the results stream reads them back
