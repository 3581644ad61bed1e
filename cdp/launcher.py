"""Find, launch and reliably kill a headless Chromium.

Chrome runs in its own process group so that one ``killpg`` takes every zygote and renderer with
it. browserd speaks to it over ``--remote-debugging-pipe`` (fds 3 and 4): no DevTools port is
opened, so no page can reach the browser's debugger through ``http://127.0.0.1:<port>``. A port
is opened only when asked for (``debugging="port"``, to hand the browser to another client); it
is chosen by Chrome (``--remote-debugging-port=0``) and read back from ``DevToolsActivePort``, so
parallel launches never race for a port.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cdp.confinement import Confinement, die_with_parent, scratch_of  # noqa: F401  (die_with_parent: re-exported)
from cdp.errors import ChromeLaunchError, ChromeNotFound
from config.isolation import CHROME_USER

log = logging.getLogger("browserd.cdp")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of /proc/<pid>/stat's CPU times

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Every browser context opens its own headless window, and Chrome 14x+ gives each window hidden
# omnibox-popup WebUI renderers; with a spare renderer pre-spawned per context on top, a job's
# context cost four renderer processes instead of one. Measured on Chromium 156 (one context,
# one small page, 11 DOM captures): 1.17 s of Chrome CPU per job before, 0.39 s after.
DISABLED_FEATURES = (
    "Translate",
    "MediaRouter",
    "OptimizationHints",
    "WebUIOmniboxPopup",
    "WebUIOmniboxAimPopup",
    "WebUIOmniboxFullPopup",
    "SpareRendererForSitePerProcess",  # the pool's warm contexts are our spares
    # Chrome's own form-autofill queries (content-autofill.googleapis.com on a form submit) go out
    # through a job's egress gate like page traffic, where they were refused and reported to the
    # model as if the page had tried them: browserd's browsers have no use for Google's service.
    "AutofillServerCommunication",
)

HEADLESS_FLAGS = (
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--password-store=basic",
    "--use-mock-keychain",
    "--disable-features=" + ",".join(DISABLED_FEATURES),
    "--window-size=1280,1100",
)


def merge_feature_switches(args: list[str]) -> list[str]:
    """One ``--disable-features``/``--enable-features`` switch each: Chrome reads only the last one,
    so a user's ``BROWSERD_CHROME_ARGS=--disable-features=X`` would silently re-enable ours."""
    merged: dict[str, list[str]] = {}
    out: list[str] = []
    for arg in args:
        name, eq, value = arg.partition("=")
        if eq and name in ("--disable-features", "--enable-features"):
            if name not in merged:
                merged[name] = []
                out.append(name)
            merged[name].extend(v for v in value.split(",") if v and v not in merged[name])
        else:
            out.append(arg)
    return [f"{a}={','.join(merged[a])}" if a in merged else a for a in out]


def find_chrome(explicit: str | None = None) -> str:
    """The Chrome binary to run: ``explicit`` (BROWSERD_CHROME_PATH) if given, else the first on PATH."""
    if explicit:
        path = shutil.which(explicit)
        if path is None:
            raise ChromeNotFound(
                f"BROWSERD_CHROME_PATH={explicit!r} is not an executable file; "
                "point it at a Chrome/Chromium binary or unset it to search PATH"
            )
        return path
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    raise ChromeNotFound(
        "no Chrome found: looked for " + ", ".join(CANDIDATES) + " on PATH. "
        "Install Debian's 'chromium' package (apt-get install chromium) or set BROWSERD_CHROME_PATH"
    )


Debugging = Literal["pipe", "port"]

# Chrome's pipe ends are its fds 3 (commands in) and 4 (replies and events out). subprocess keeps
# passed fds at their own numbers, so a shell moves ours there just before Chrome starts (bash:
# dash takes single-digit fds only, and ours are above 9).
_PIPE_EXEC = 'exec "$@" 3<&{in_} 4>&{out} {in_}<&- {out}>&-'
_HIGH_FD = 10  # our pipe fds live above 4, so the shell's moves never overwrite one another


@dataclass
class CdpPipe:
    """Our ends of a launched Chrome's DevTools pipes."""

    read_fd: int  # Chrome's fd 4
    write_fd: int  # Chrome's fd 3


@dataclass
class ChromeProcess:
    """A launched Chrome: its process, profile directory and DevTools endpoint (a pipe or a port)."""

    proc: asyncio.subprocess.Process
    user_data_dir: Path
    ws_url: str
    port: int
    stderr_path: Path
    pipe: CdpPipe | None = None
    confinement: Confinement | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    @property
    def exited(self) -> bool:
        """Chrome's own process has ended, read from /proc now: ``alive`` waits for the reaper, and a
        crash's other signals (its network service exiting, its pipe closing) can come before that."""
        return self.proc.returncode is not None or not _running(self.proc.pid)

    def stderr_tail(self, lines: int = 15) -> str:
        return _tail(self.stderr_path, lines)

    async def kill(self, grace: float = 2.0) -> None:
        """Stop Chrome and every child, then delete the profile. Safe to call twice."""
        if self.proc.returncode is None:
            _signal_group(self.proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), grace)
            except asyncio.TimeoutError:
                pass
        # Children can outlive the parent for a moment; the group kill catches them all.
        leftovers = _signal_group(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            await self.proc.wait()
        await _wait_gone(leftovers, timeout=3.0)
        await asyncio.to_thread(_remove_tree, self.user_data_dir)


async def launch_chrome(
    executable: str | None = None,
    *,
    extra_args: list[str] | tuple[str, ...] = (),
    timeout: float = 20.0,
    die_with_parent_process: bool = True,
    debugging: Debugging = "pipe",
    confinement: Confinement | None = None,
) -> ChromeProcess:
    """Start headless Chrome with a fresh profile, its DevTools on a pipe (or a port, if asked).

    ``debugging="pipe"`` (the default): ``ChromeProcess.pipe`` holds our ends and no port exists.
    ``debugging="port"``: wait until the DevTools port is open (``ws_url``, ``port``).

    ``die_with_parent_process``: Chrome gets SIGKILL when the thread that launched it dies (Linux
    ``PR_SET_PDEATHSIG``), so a worker killed with SIGKILL leaves no browser behind; Chrome's own
    children exit when their browser process goes. Its own session keeps it out of our signals.

    ``confinement`` (``cdp.confinement``): its network namespace, user, sandbox and environment;
    default: what this host allows, without a namespace.
    """
    binary = find_chrome(executable)
    confinement = confinement or Confinement.for_host(CHROME_USER, chrome_args=tuple(extra_args))
    profile = Path(tempfile.mkdtemp(prefix=PROFILE_PREFIX))
    stderr_path = profile.parent / (profile.name + ".stderr")
    try:
        scratch = confinement.prepare(profile)
    except OSError as exc:
        await asyncio.to_thread(_remove_tree, profile)
        raise ChromeLaunchError(f"cannot prepare chrome's profile {profile}: {exc}") from exc
    args = [
        binary,
        *merge_feature_switches([*HEADLESS_FLAGS, *confinement.flags(), *extra_args]),
        f"--user-data-dir={profile}",
        *(["--remote-debugging-pipe"] if debugging == "pipe" else
          ["--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1"]),
        "about:blank",
    ]
    ours, theirs = _pipes() if debugging == "pipe" else (None, ())
    stderr = open(stderr_path, "wb")  # a file, not a pipe: a chatty Chrome must never block on it
    try:
        proc = await asyncio.create_subprocess_exec(
            *_with_pipes(args, theirs),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            pass_fds=theirs,
            env=confinement.environment(profile, scratch),
            preexec_fn=confinement.preexec(die_with_parent_process),
        )
    except OSError as exc:
        if ours is not None:
            _close_fds(ours.read_fd, ours.write_fd)
        await asyncio.to_thread(_remove_tree, profile)
        raise ChromeLaunchError(f"cannot execute {binary}: {exc}") from exc
    finally:
        stderr.close()
        _close_fds(*theirs)
    chrome = ChromeProcess(proc, profile, "", 0, stderr_path, pipe=ours, confinement=confinement)
    if ours is None:
        try:
            chrome.port, chrome.ws_url = await _wait_for_port(chrome, timeout)
        except BaseException:
            await chrome.kill(grace=0.5)
            raise
    log.debug("launched chrome pid=%s debugging=%s", proc.pid, debugging if ours else f"port {chrome.port}")
    return chrome


def _pipes() -> tuple[CdpPipe, tuple[int, int]]:
    """Two pipes: ours (close-on-exec) and Chrome's ends (its fd 3 source, its fd 4 target)."""
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()
    theirs = tuple(_high(fd, inheritable=True) for fd in (to_chrome_r, from_chrome_w))
    ours = CdpPipe(read_fd=_high(from_chrome_r), write_fd=_high(to_chrome_w))
    return ours, theirs  # type: ignore[return-value]


def _high(fd: int, *, inheritable: bool = False) -> int:
    """``fd`` moved to a number of at least ``_HIGH_FD``."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _HIGH_FD)
    os.close(fd)
    os.set_inheritable(moved, inheritable)
    return moved


def _with_pipes(args: list[str], theirs: tuple[int, ...]) -> list[str]:
    if not theirs:
        return args
    in_, out = theirs
    return ["/bin/bash", "-c", _PIPE_EXEC.format(in_=in_, out=out), "bash", *args]


def _close_fds(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


async def _wait_for_port(chrome: ChromeProcess, timeout: float) -> tuple[int, str]:
    marker = chrome.user_data_dir / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if chrome.proc.returncode is not None:
            raise ChromeLaunchError(
                f"chrome exited with code {chrome.proc.returncode} before opening its DevTools port",
                chrome.stderr_tail(),
            )
        try:
            lines = marker.read_text().splitlines()
        except FileNotFoundError:
            lines = []
        if len(lines) >= 2 and lines[0].strip().isdigit():
            port = int(lines[0])
            return port, f"ws://127.0.0.1:{port}{lines[1].strip()}"
        await asyncio.sleep(0.01)
    raise ChromeLaunchError(f"chrome did not open its DevTools port within {timeout:g}s", chrome.stderr_tail())


def process_tree(root_pid: int) -> list[int]:
    """``root_pid`` and all of its descendants, read from /proc (Linux).

    Not psutil: measured with ~230 processes, ``Process.children(recursive=True)`` took 114 ms
    against 38 ms here (and ``process_iter`` 205 ms against 97 ms for ``chrome_pids``).
    """
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    tree, stack = [], [root_pid]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(children.get(pid, ()))
    return tree


def process_cpu_seconds(pid: int, *, reaped: bool = False) -> float:
    """User and system CPU-seconds a process has used (``/proc/<pid>/stat``); with ``reaped``, also
    those of its children it has waited for (a Chrome renderer that ended is counted in its parent's).
    Raises ``OSError`` for a process that is gone."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return sum(int(x) for x in fields[11:15 if reaped else 13]) / CLOCK_TICKS


def chrome_pids(marker: str) -> set[int]:
    """Running (non-zombie) Chrome processes whose command line contains ``marker``.

    Chrome hands its ``--user-data-dir`` to every child it starts (zygotes, renderers,
    utilities), so a profile path, or the temp directory it lives in, names a browser's whole
    process tree, even after the browser itself has died.
    """
    needle = marker.encode()
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
            end = stat.rfind(b")")
            if b"chrom" not in stat[stat.find(b"(") + 1 : end].lower() or stat[end + 2 : end + 3] == b"Z":
                continue
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                if needle in fh.read():
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


def tree_memory_bytes(root_pid: int, past: int = 0) -> int:
    """Proportional set size of a process and its descendants; with ``past``, the summed resident
    size instead whenever that is at most ``past`` bytes.

    PSS, not RSS: Chrome's processes share most of their pages, and summing RSS counts those
    pages once per process, several times the real footprint. But PSS is dear to read (the kernel
    walks every mapping for ``smaps_rollup``: the pool's health check was a tenth of a busy
    worker's samples, issue 27), and a process's PSS is never above its RSS, so a tree whose RSS
    sum is within ``past`` is within it by PSS too: a check against a limit reads PSS only past it.
    """
    tree = process_tree(root_pid)
    if past > 0:
        resident = _resident_bytes(tree)
        if resident <= past:
            return resident
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, IndexError, ValueError):
            continue
    return total


def _resident_bytes(pids: list[int]) -> int:
    """Summed resident size of ``pids`` (``/proc/<pid>/statm``: no walk of the mappings)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * PAGE_BYTES
        except (OSError, IndexError, ValueError):
            continue
    return total


def _signal_group(pid: int, sig: signal.Signals) -> list[int]:
    """Signal the group and every descendant (some may have left the group); returns the pids."""
    targets = process_tree(pid)
    for target in targets:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    return targets


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


async def _wait_gone(pids: list[int], timeout: float) -> None:
    """Return once every pid has exited, so callers can rely on a clean process table."""
    deadline = time.monotonic() + timeout
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


PROFILE_PREFIX = "browserd-chrome-"


def sweep_stale_profiles(directory: str | None = None, *, min_age: float = 60.0) -> int:
    """Delete profiles left by browsers that died with their process (a SIGKILLed worker).

    A live Chrome holds ``SingletonLock``, a symlink to ``host-pid``; a profile whose lock names
    a pid that no longer runs here (or that has no lock and is older than ``min_age``) is stale.
    Returns how many were removed.
    """
    root = Path(directory or tempfile.gettempdir())
    host = os.uname().nodename
    removed = 0
    for profile in root.glob(PROFILE_PREFIX + "*"):
        if not profile.is_dir() or not _stale(profile, host, min_age):
            continue
        _remove_tree(profile)
        removed += 1
    return removed


def _stale(profile: Path, host: str, min_age: float) -> bool:
    try:
        owner = os.readlink(profile / "SingletonLock")
    except OSError:
        try:
            return time.time() - profile.stat().st_mtime > min_age
        except OSError:
            return False
    name, _, pid = owner.rpartition("-")
    if name != host or not pid.isdigit():
        return False  # another machine's browser on a shared directory: not ours to judge
    return not _running(int(pid))


def _remove_scratch(profile: Path) -> None:
    """Delete the ``org.chromium.Chromium.*`` directory Chrome made in ``$TMPDIR``.

    Chrome leaves one per start. The profile's ``SingletonSocket`` symlink points into it, which
    tells us exactly which one is ours. (Moving ``$TMPDIR`` into the profile instead makes the
    socket path longer than a Unix socket may be.)
    """
    try:
        scratch = Path(os.readlink(profile / "SingletonSocket")).parent
    except OSError:
        return
    if scratch.name.startswith("org.chromium.Chromium."):
        shutil.rmtree(scratch, ignore_errors=True)


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_bytes()[-8192:].decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _remove_tree(path: Path) -> None:
    _remove_scratch(path)
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(scratch_of(path), ignore_errors=True)
    stderr = path.parent / (path.name + ".stderr")
    with contextlib.suppress(FileNotFoundError):
        stderr.unlink()
