"""Raw CDP: one pipe (or websocket) per browser, flattened sessions, a Chromium launcher, a lease pool,
the egress proxy every leased context goes through (and a job's upstream proxy chained behind it),
and a context's storage state (cookies, localStorage) written and read back."""

from cdp.browser import Browser
from cdp.connection import Connection
from cdp.egress import EgressProxy, Gate, NetworkPolicy
from cdp.errors import (
    BrowserGone,
    CDPError,
    CDPException,
    CDPTimeout,
    ChromeLaunchError,
    ChromeNotFound,
    NavigationError,
    NetworkServiceRestarted,
    PoolClosed,
    ResourceLimitExceeded,
    TargetClosed,
    TargetCrashed,
)
from cdp.isolation import IsolationReport
from cdp.launcher import (
    chrome_pids,
    die_with_parent,
    find_chrome,
    launch_chrome,
    process_cpu_seconds,
    process_tree,
    sweep_stale_profiles,
)
from cdp.lease import Lease
from cdp.downloads import Download, DownloadLimits, Downloads, DownloadState
from cdp.page import Dialog, EvaluationError, Page
from cdp.pool import BrowserPool, PoolConfig, PoolEvent, PoolEventKind, PoolStats, RecycleReason
from cdp.session import CDPSession
from cdp.storage import OriginLog, read_state, write_state
from cdp.upstream import Fallback, UpstreamProxy

__all__ = [
    "Browser", "BrowserGone", "Dialog", "Download", "DownloadLimits", "Downloads", "DownloadState",
    "ResourceLimitExceeded",
    "BrowserPool", "CDPError", "CDPException", "CDPSession", "CDPTimeout", "ChromeLaunchError", "ChromeNotFound",
    "Connection", "EgressProxy", "EvaluationError", "Gate", "IsolationReport", "Lease", "NavigationError",
    "NetworkPolicy", "NetworkServiceRestarted",
    "OriginLog", "Page", "PoolClosed", "PoolConfig", "PoolEvent", "PoolEventKind", "PoolStats", "RecycleReason",
    "TargetClosed", "TargetCrashed", "UpstreamProxy", "Fallback",
    "chrome_pids", "die_with_parent", "find_chrome", "launch_chrome", "process_cpu_seconds", "process_tree",
    "read_state",
    "sweep_stale_profiles", "write_state",
]
