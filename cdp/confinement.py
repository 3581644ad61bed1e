"""How a launched Chrome is confined: its sandbox, its user, its environment, its network, its WebRTC.

``Confinement.for_host`` decides once per pool what this host allows, and says why a layer is off:

* **Sandbox.** Chrome's renderer sandbox is on unless the host makes it impossible. Debian's
  chromium has no setuid helper: its sandbox needs user namespaces, so ``for_host`` tries one (a
  child doing ``unshare(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNET)``, as the user Chrome will run as)
  and passes ``--no-sandbox`` only when that is refused, or when the operator asked for it in
  ``BROWSERD_CHROME_ARGS``. Chrome refuses to run sandboxed as root.
* **User.** A worker running as root starts Chrome as ``BROWSERD_CHROME_USER`` (``browserd-chrome``,
  made by ``.ci/setup`` and the Dockerfile): the preexec drops to it after joining the namespace. A
  renderer exploit then holds neither the worker's files (sealed secrets, profiles) nor its
  ``/proc/<pid>/environ``.
* **Environment.** Chrome gets an explicit, minimal environment (``ENVIRONMENT``): no key, token or
  URL of the worker (``BROWSERD_SECRETS_KEY``, ``BROWSERD_API_TOKEN``, ``OPENAI_API_KEY``, the Redis
  URL) reaches it or its children.
* **Network.** A ``cdp.netns.BrowserNetwork`` the child joins (the pool makes one where it may).
* **WebRTC.** Every profile starts with the preference ``webrtc.ip_handling_policy =
  disable_non_proxied_udp`` (what the managed policy ``WebRtcIPHandling`` sets): WebRTC then sends no
  UDP that does not go through the context's proxy. Measured on Debian's Chromium 156: the switch
  ``--force-webrtc-ip-handling-policy`` leaves the ICE checks going out; this preference, like a
  managed policy file, stops them, in every browser context, per launch, without root.
"""

from __future__ import annotations

import ctypes
import functools
import json
import logging
import os
import pwd
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cdp.netns import BrowserNetwork
from config.isolation import IsolationLayer

log = logging.getLogger("browserd.cdp")

_PR_SET_PDEATHSIG = 1
NO_SANDBOX = "--no-sandbox"
ENVIRONMENT = ("PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "HOME", "CHROMIUM_FLAGS", "FONTCONFIG_FILE",
               "FONTCONFIG_PATH")
"""The worker's variables Chrome may inherit (plus every ``LC_*``); nothing else reaches it."""
WEBRTC_PREFERENCES = {"webrtc": {"ip_handling_policy": "disable_non_proxied_udp", "multiple_routes_enabled": False,
                                 "nonproxied_udp_enabled": False}}
_USERNS_PROBE = ("unshare", "--user", "--pid", "--net", "--fork", "true")  # util-linux, in every Debian


@dataclass(frozen=True)
class ChromeUser:
    """The unprivileged account Chrome runs as when the worker is root."""

    name: str
    uid: int
    gid: int

    @classmethod
    def lookup(cls, name: str) -> ChromeUser | None:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            return None
        return cls(name, entry.pw_uid, entry.pw_gid)

    def give(self, path: Path) -> None:
        """Make ``path`` (a directory or file we made for Chrome) the user's, and let the user reach it."""
        os.chown(path, self.uid, self.gid)
        _let_through(path.parent)


@dataclass(frozen=True)
class Confinement:
    """What a launch applies; ``off`` says why each missing layer is missing (for the log and doctor)."""

    sandbox: bool
    user: ChromeUser | None = None
    network: BrowserNetwork | None = None
    off: dict[IsolationLayer, str] = field(default_factory=dict)  # why a layer is not active here

    @classmethod
    def for_host(cls, user_name: str, *, chrome_args: tuple[str, ...] | list[str] = (),
                 network: BrowserNetwork | None = None) -> Confinement:
        """The confinement this host allows (``user_name`` empty: never switch users)."""
        off: dict[IsolationLayer, str] = {}
        user = None
        if os.geteuid() == 0:
            user = ChromeUser.lookup(user_name) if user_name else None
            if user is None:
                off[IsolationLayer.separate_user] = (f"the worker runs as root and user {user_name!r} does not exist "
                                        "(create it, as .ci/setup does, or set BROWSERD_CHROME_USER)"
                                        if user_name else "BROWSERD_CHROME_USER is empty")
        else:
            off[IsolationLayer.separate_user] = "the worker is not root, so Chrome runs as the worker's own user"
        sandbox = True
        if NO_SANDBOX in chrome_args:
            sandbox, off[IsolationLayer.sandbox] = False, "BROWSERD_CHROME_ARGS has --no-sandbox"
        elif os.geteuid() == 0 and user is None:
            sandbox, off[IsolationLayer.sandbox] = False, "Chrome cannot be sandboxed as root and has no other user to run as"
        else:
            refusal = _user_namespaces_refused(user.uid if user else None, user.gid if user else None)
            if refusal:
                sandbox, off[IsolationLayer.sandbox] = False, f"user namespaces are refused here ({refusal}); Chrome's sandbox needs them"
        return cls(sandbox, user, network, off)

    def flags(self) -> list[str]:
        return [] if self.sandbox else [NO_SANDBOX]

    def environment(self, profile: Path, scratch: Path | None) -> dict[str, str]:
        """Chrome's whole environment: the allowed variables, HOME and TMPDIR Chrome may write to."""
        env = {k: v for k, v in os.environ.items() if k in ENVIRONMENT or k.startswith("LC_")}
        if self.user is not None:
            env["HOME"] = str(profile)
        if scratch is not None:
            env["TMPDIR"] = str(scratch)
        return env

    def prepare(self, profile: Path) -> Path | None:
        """Seed the profile (WebRTC preference) and hand it to Chrome's user; returns the scratch
        directory Chrome gets as ``$TMPDIR``: Chrome's own user's (the worker's may not be writable to
        it), or a short one when the worker's ``$TMPDIR`` is too long to hold Chrome's singleton
        socket; None: Chrome keeps the worker's ``$TMPDIR``."""
        default = profile / "Default"
        default.mkdir()
        (default / "Preferences").write_text(json.dumps(WEBRTC_PREFERENCES))
        if self.user is None and socket_fits(profile.parent):
            return None
        scratch = scratch_of(profile)
        scratch.mkdir(mode=0o700)
        if self.user is None:
            return scratch
        for path in (profile, default, default / "Preferences", scratch):
            self.user.give(path)
        return scratch

    def preexec(self, die_with_parent_process: bool) -> Callable[[], None] | None:
        """The child's steps before exec: join the namespace (as root), drop to the user, then ask
        for SIGKILL when the launching thread dies (after the drop: a credential change clears it)."""
        network, user = self.network, self.user
        on_parent_death = die_with_parent() if die_with_parent_process else None
        if network is None and user is None:
            return on_parent_death

        def preexec() -> None:
            if network is not None:
                network.join()
            if user is not None:
                os.setgroups([])
                os.setgid(user.gid)
                os.setuid(user.uid)
            if on_parent_death is not None:
                on_parent_death()

        return preexec


SCRATCH_PREFIX = "c"  # short: Chrome's singleton socket path under it must stay below 108 bytes
SOCKET_PATH_MAX = 107  # a Unix socket's path: 108 bytes with its NUL (sun_path)
CHROME_SOCKET = "/org.chromium.Chromium.XXXXXX/SingletonSocket"
"""What Chrome adds to its ``$TMPDIR`` for the socket a second start of a profile would find it by.
A path past ``SOCKET_PATH_MAX`` aborts every launch (``Socket path too long``)."""
SHORT_ROOTS = ("/tmp", "/var/tmp", "/dev/shm")
"""Where a scratch directory goes when the one beside the profile would be too deep for the socket."""


def socket_fits(tmpdir: Path) -> bool:
    """Whether Chrome's singleton socket fits below ``tmpdir`` (as its ``$TMPDIR``)."""
    return len(os.fsencode(str(tmpdir))) + len(CHROME_SOCKET) <= SOCKET_PATH_MAX


def scratch_of(profile: Path) -> Path:
    """The scratch directory ``prepare`` makes for ``profile``, named after it so that the profile's
    removal, or a sweep of stale profiles, finds it: beside the profile, or, when ``$TMPDIR`` is so
    long that Chrome's socket would not fit below it, in the first of ``SHORT_ROOTS`` this process
    may write (a ``$TMPDIR`` of any length works)."""
    name = SCRATCH_PREFIX + profile.name[-8:]
    beside = profile.parent / name
    if socket_fits(beside):
        return beside
    for root in SHORT_ROOTS:
        short = Path(root) / f"browserd-{profile.parent.name[-8:]}-{name}"  # distinct per profile folder
        if socket_fits(short) and os.path.isdir(root) and os.access(root, os.W_OK | os.X_OK):
            return short
    return beside  # Chrome refuses it: the launch error shows its stderr, naming the socket's path


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` asking the kernel to send ``sig`` to the child when the thread that
    started it dies (Linux ``PR_SET_PDEATHSIG``); None where that does not exist.

    libc and ``prctl`` are resolved here, before the fork, so the child only makes one C call.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sig)

    return preexec


def _let_through(directory: Path) -> None:
    """Chrome's user must traverse to its profile: add search (not read) permission for others to the
    directories on the way that are the worker's own and closed (a ``mkdtemp`` ``$TMPDIR``)."""
    for path in (directory, *directory.parents):
        try:
            st = path.stat()
        except OSError:
            return
        if st.st_uid == os.geteuid() and not st.st_mode & 0o001:
            os.chmod(path, st.st_mode | 0o001)
            log.warning("made %s searchable by others (o+x, not readable) so that Chrome's user can reach its "
                        "files below it; point TMPDIR at a directory others may enter to avoid this", path)


@functools.lru_cache(maxsize=8)
def _user_namespaces_refused(uid: int | None, gid: int | None) -> str | None:
    """Why a child (as ``uid``) cannot make the namespaces Chrome's sandbox makes; None: it can."""
    try:
        done = subprocess.run(_USERNS_PROBE, capture_output=True, timeout=10, env={"PATH": os.defpath},
                              user=uid, group=gid, extra_groups=[] if uid is not None else None)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the probe '{' '.join(_USERNS_PROBE)}' could not run: {exc}"
    if done.returncode != 0:
        return done.stderr.decode(errors="replace").strip().splitlines()[-1:][0] if done.stderr.strip() \
            else f"'{' '.join(_USERNS_PROBE)}' exited with {done.returncode}"
    return None
