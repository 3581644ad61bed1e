"""The job kernel: what a job is and where its state lives, shared by the API and the workers.

It imports only ``config`` (and its libraries: pydantic, redis, celery, prometheus-client,
jsonschema), never the agent, the browser layer or the HTTP API, so both sides can use it:

    daemon (API, CLI)  ──►  workers.jobs  ◄──  workers (tasks, runtime)  ──►  workers.agent

* ``models``: ``JobSpec``, ``JobResult``, states and failure categories;
* ``actions``: the parameter schema of every action and ``validate_script``;
* ``locators``: ``Locator``, what a step records about the element it acted on (found again by ``dom.refind``);
* ``specs``: checking what users submit (``check_spec``, batch bodies); ``output``: output schemas;
* ``store``, ``records``, ``keys``, ``lua``: job records and transitions in Redis;
* ``batches``, ``schedules``, ``submission``, ``finishing``: what happens around a job;
* ``steering``: pause, resume and follow-up tasks (a job's kept session);
* ``queue``: the Celery app's configuration and a publisher that sends tasks by name; ``bulk``;
* ``metrics``: every Prometheus series browserd exports, and how it is observed;
* ``destinations``: which addresses a webhook receiver may have;
* ``politeness``: per-domain limits of a job (``PolitenessOptions``, ``limits_for``, registrable
  domains); ``domain_limits``: their slots and navigation spacing in Redis; ``robots``: robots.txt
  rules and their cache;
* ``secrets``, ``credentials``: job secrets and named credential sets, sealed with Fernet;
* ``sessions``, ``session_models``: interactive sessions (record, command list, replies) served by workers;
* ``browsing``: per-job browser settings (``proxy``, headers, user agent, locale, ...);
* ``profiles``: auth profiles (Playwright storage states), sealed, versioned;
* ``artifacts``: the artifact store (fsspec) jobs' files live in, large results offloaded to it;
* ``errors``: ``SpecError``, ``QueueUnavailable``, the sessions' typed errors.
"""

from workers.jobs.artifacts import ArtifactError, ArtifactStore, JobArtifacts
from workers.jobs.batches import BatchRecord, BatchStore
from workers.jobs.errors import (
    FieldProblem,
    JobsError,
    QueueUnavailable,
    SessionCommandFailed,
    SessionError,
    SessionLimitReached,
    SessionNotFound,
    SessionUnresponsive,
    SpecError,
)
from workers.jobs.finishing import Finisher
from workers.jobs.keys import Keys, is_id, new_id
from workers.jobs.locators import FrameHop, Locator
from workers.jobs.models import (
    FINAL_STATES,
    FailureCategory,
    JobResult,
    JobSpec,
    FollowUpRequest,
    JobStatus,
    Priority,
    RunRecord,
    SessionState,
    StepRecord,
)
from workers.jobs.records import JobEvent, JobRecord, Progress
from workers.jobs.session_models import SessionOptions, SessionRecord
from workers.jobs.sessions import SessionStore, open_session
from workers.jobs.steering import SteerRefused
from workers.jobs.store import Claim, FollowUpClaim, JobListing, JobStore, connect

__all__ = [
    "FINAL_STATES", "ArtifactError", "ArtifactStore", "BatchRecord", "BatchStore", "Claim", "FailureCategory", "FieldProblem",
    "Finisher", "FollowUpClaim", "FollowUpRequest", "FrameHop", "JobArtifacts",
    "JobEvent", "JobListing", "JobRecord", "JobResult", "JobSpec", "JobStatus", "JobStore", "JobsError", "Keys", "Locator",
    "Priority", "Progress", "QueueUnavailable", "RunRecord", "SessionCommandFailed", "SessionError", "SessionLimitReached",
    "SessionNotFound", "SessionOptions", "SessionRecord", "SessionState", "SessionStore", "SessionUnresponsive", "SpecError",
    "SteerRefused", "StepRecord", "connect", "is_id", "new_id", "open_session",
]
