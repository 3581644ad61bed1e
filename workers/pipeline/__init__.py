"""How a job runs: one pipeline, whatever runs it.

    claim -> prepare -> acquire -> attach -> run -> settle -> record -> after

A Celery worker (``workers.runtime``), ``browserd run``, the benches and the tests all run jobs
through ``Pipeline`` (``workers.pipeline.pipeline``); they differ only in where the job's record
lives (``RunRecords``: the Redis store, or ``LocalRecords`` in this process) and in what the
features find around them (``Services``). Each feature of a run (secrets, auth profiles, recipes,
politeness, artifacts, the live view, result limits, kept sessions) is one module under
``workers.pipeline.features`` plugged into named stages (``Feature``), listed once in
``FEATURES``. Every run has one time budget (``workers.jobs.budget.TimeBudget``) and every failure
is named by one table (``workers.agent.failures``).
"""

from workers.pipeline.feature import Feature, Services, Stage
from workers.pipeline.features import FEATURES
from workers.pipeline.local import run_local
from workers.pipeline.pipeline import Abandoned, Delivered, GivenLease, Pipeline
from workers.pipeline.records import LocalRecords, RunRecords, StoreRecords
from workers.pipeline.run import JobRun

__all__ = ["FEATURES", "Delivered", "Abandoned", "Feature", "GivenLease", "JobRun", "LocalRecords", "Pipeline",
           "RunRecords", "Services", "Stage", "StoreRecords", "run_local"]
