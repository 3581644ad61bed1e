"""Raw CDP: one websocket per browser, flattened sessions, a Chromium launcher and a lease pool."""

from cdp.browser import Browser
from cdp.connection import Connection
from cdp.errors import (
    BrowserGone,
    CDPError,
    CDPException,
    CDPTimeout,
    ChromeLaunchError,
    ChromeNotFound,
    NavigationError,
    PoolClosed,
    TargetClosed,
    TargetCrashed,
)
from cdp.launcher import chrome_pids, die_with_parent, find_chrome, launch_chrome, process_tree, sweep_stale_profiles
from cdp.lease import Lease
from cdp.page import EvaluationError, Page
from cdp.pool import BrowserPool, PoolConfig, PoolStats
from cdp.session import CDPSession

__all__ = [
    "Browser", "BrowserGone", "BrowserPool", "CDPError", "CDPException", "CDPSession", "CDPTimeout",
    "ChromeLaunchError", "ChromeNotFound", "Connection", "EvaluationError", "Lease", "NavigationError",
    "Page", "PoolClosed", "PoolConfig", "PoolStats", "TargetClosed", "TargetCrashed", "chrome_pids", "die_with_parent", "find_chrome",
    "launch_chrome", "process_tree", "sweep_stale_profiles",
]
