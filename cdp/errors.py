"""Typed CDP failures. Each carries enough context to act on without a debugger."""

from __future__ import annotations


class CDPException(Exception):
    """Base of every failure raised by the cdp package."""


class CDPError(CDPException):
    """Chrome answered a command with an error object."""

    def __init__(self, method: str, code: int, message: str, data: str | None = None) -> None:
        self.method, self.code, self.message, self.data = method, code, message, data
        detail = f" ({data})" if data else ""
        super().__init__(f"{method} failed: [{code}] {message}{detail}")


class CDPTimeout(CDPException):
    """A command got no answer in time; the connection may still be healthy."""

    def __init__(self, method: str, timeout: float) -> None:
        self.method, self.timeout = method, timeout
        super().__init__(f"{method} got no reply within {timeout:g}s")


class BrowserGone(CDPException):
    """The websocket closed or the browser process died; nothing sent to it will be answered."""

    def __init__(self, reason: str, *, method: str | None = None) -> None:
        self.reason, self.method = reason, method
        where = f" during {method}" if method else ""
        super().__init__(f"browser gone{where}: {reason}")


class TargetCrashed(CDPException):
    """A page's renderer crashed; the browser and its other pages are unaffected."""

    def __init__(self, target_id: str, *, method: str | None = None) -> None:
        self.target_id, self.method = target_id, method
        where = f" during {method}" if method else ""
        super().__init__(f"target {target_id} crashed{where}")


class TargetClosed(CDPException):
    """The session's target was closed or detached while a command was pending."""

    def __init__(self, target_id: str, *, method: str | None = None) -> None:
        self.target_id, self.method = target_id, method
        where = f" during {method}" if method else ""
        super().__init__(f"target {target_id} closed{where}")


class ResourceLimitExceeded(CDPException):
    """A lease's pages used more memory than its limit and were stopped; other leases are unaffected."""

    def __init__(self, context_id: str, used_bytes: int, limit_bytes: int, *, measure: str) -> None:
        self.context_id, self.used_bytes, self.limit_bytes, self.measure = context_id, used_bytes, limit_bytes, measure
        mib = 1024 * 1024
        super().__init__(f"the page used {used_bytes // mib} MiB ({measure}), more than the "
                         f"{limit_bytes // mib} MiB limit of one browser context; it was stopped")


class ChromeNotFound(CDPException):
    """No Chrome binary at the configured path or on PATH."""


class ChromeLaunchError(CDPException):
    """Chrome started but never opened its DevTools port; ``stderr_tail`` says why."""

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        self.stderr_tail = stderr_tail
        tail = f"\n--- last lines of chrome's stderr ---\n{stderr_tail}" if stderr_tail else ""
        super().__init__(message + tail)


class NavigationError(CDPException):
    """Chrome refused or failed a navigation (DNS failure, blocked, aborted)."""

    def __init__(self, url: str, error_text: str) -> None:
        self.url, self.error_text = url, error_text
        super().__init__(f"navigation to {url} failed: {error_text}")


class PoolClosed(CDPException):
    """The pool was closed; no more leases are served."""


class NetworkServiceRestarted(BrowserGone):
    """The browser's network service died and Chrome restarted it: its contexts lost their proxy, so the
    pool stopped every lease of that browser and recycles it (``cdp.netwatch``)."""

    def __init__(self, pid: int) -> None:
        super().__init__(f"its network service (pid {pid}) died; Chrome's restarted one would not keep the "
                         "egress gate, so the browser is recycled")
        self.pid = pid
