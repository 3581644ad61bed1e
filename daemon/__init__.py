"""The daemon: the job store in Redis, the HTTP API (``daemon.api.create_app``) and the ``browserd`` CLI.

The API module is not imported here (it pulls in FastAPI); import ``daemon.api`` where it is served.
"""

from daemon.batches import BatchRecord, BatchStore
from daemon.keys import Keys
from daemon.records import JobEvent, JobRecord, Progress
from daemon.store import Claim, JobStore, Page, connect

__all__ = [
    "BatchRecord", "BatchStore", "Claim", "JobEvent", "JobRecord", "JobStore", "Keys", "Page", "Progress", "connect",
]
