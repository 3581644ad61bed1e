"""Every kernel error survives pickling (issue 25, item 4).

Celery pickles what a task raised to match it against the task's ``throws``; ``JobFailed`` (whose
``__init__`` takes a job id and a status, not its message) came back as an
``UnpickleableExceptionWrapper``, so every routine failure was logged as an unexpected ERROR with a
traceback. Each error class of ``workers.jobs`` is built here from sample arguments and must come
back from a pickle round trip, and from Celery's own check, as the same class with the same context.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import sys
from typing import Any

import pytest
from celery.utils.serialization import get_pickleable_exception

import workers.jobs
from workers.jobs.errors import FieldProblem, JobsError
from workers.jobs.lifecycle.steering import SteerRefusal
from workers.jobs.model.status import JobStatus
from workers.jobs.sessions.models import ReplyCode
from workers.jobs.specs.schema_limits import SchemaLimit
from workers.jobs.tenants.models import Quota
from workers.tasks import JobFailed

SAMPLES: dict[str, tuple[Any, ...]] = {
    "JobsError": ("plain",),
    "SpecError": ([FieldProblem("options.max_steps", "too many", None)],),
    "QueueUnavailable": ("no broker",),
    "CrawlNotCancelled": ("crawl 0 was not cancelled (completed)",),
    "PageRequeued": ("the site refused this page's visit and job 0 visits it again",),
    "CredentialsMissing": ("shop",),
    "RecipeUnavailable": ("recipe gone",),
    "InputFileMissing": ("0" * 32, "report.csv"),
    "SitemapError": ("not XML: a DTD",),
    "TenantExists": ("shop-team",),
    "TenantMissing": ("shop-team",),
    "QuotaExceeded": ("shop-team", Quota.jobs_per_day, 100, 3600.0, "101 submitted today"),
    "TenantLimitsTooWide": ("0.0.0.0/0 is outside BROWSERD_ALLOWED_NETWORKS",),
    "JobVanished": ("job-1",),
    "BrowserWaitExpired": (30.0,),
    "RunBackstop": (30.0,),
    "ResultTooLarge": (2048, 1024),
    "HardLimitReached": (35.0,),
    "SchemaCheckExpired": (2.0,),
    "SlotWaitExpired": ("example.com", 2, 30.0),
    "SlotWaitCancelled": ("example.com",),
    "ProfileMissing": ("login",),
    "ProfileConflict": ("login", 3),
    "SchemaTooComplex": (SchemaLimit.depth, "nested 40 deep"),
    "SecretsUnavailable": ("no key",),
    "ArtifactError": ("a.txt", "too large"),
    "UnsafeName": ("../a", "unsafe"),
    "NoSuchArtifact": ("a.txt", "missing"),
    "SteerRefused": (SteerRefusal.conflict, "the job is not running"),
    "ControlRefused": ("console session 1a2b3c4d from 127.0.0.1",),
    "SessionError": ("session trouble",),
    "SessionNotFound": ("s-1",),
    "SessionLimitReached": (4,),
    "SessionUnresponsive": ("s-1", "open", 10.0),
    "SessionCommandFailed": (next(iter(ReplyCode)), "no such element"),
}


def kernel_errors() -> list[type[BaseException]]:
    """Every exception class defined in ``workers.jobs`` (imported in full, so new ones are found)."""
    for module in pkgutil.walk_packages(workers.jobs.__path__, "workers.jobs."):
        importlib.import_module(module.name)
    found = set()
    for name, module in list(sys.modules.items()):
        if name == "workers.jobs" or name.startswith("workers.jobs."):
            for _, kind in inspect.getmembers(module, inspect.isclass):
                if issubclass(kind, BaseException) and kind.__module__.startswith("workers.jobs"):
                    found.add(kind)
    return sorted(found, key=lambda kind: kind.__name__)


def test_every_kernel_error_has_a_sample_and_derives_from_jobs_error() -> None:
    errors = kernel_errors()
    assert {kind.__name__ for kind in errors} == set(SAMPLES), "add a sample for each new kernel error"
    assert all(issubclass(kind, JobsError) for kind in errors), [k for k in errors if not issubclass(k, JobsError)]


@pytest.mark.parametrize("kind", kernel_errors(), ids=lambda kind: kind.__name__)
def test_each_kernel_error_survives_a_pickle_round_trip(kind: type[BaseException]) -> None:
    error = kind(*SAMPLES[kind.__name__])
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is kind and str(back) == str(error) and back.args == error.args
    assert vars(back) == vars(error)
    assert type(get_pickleable_exception(error)) is kind, "Celery would wrap it and log an unexpected ERROR"


def test_job_failed_keeps_its_job_and_status_through_pickling() -> None:
    error = JobFailed("job-1", JobStatus.failed)
    back = pickle.loads(pickle.dumps(error))
    assert isinstance(back, JobFailed) and back.job_id == "job-1" and back.status is JobStatus.failed
    assert str(back) == "job job-1 ended failed"
    assert type(get_pickleable_exception(error)) is JobFailed
