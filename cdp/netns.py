"""A network namespace holding only loopback, where the pool's browsers live (issue 22).

Why: the egress gate (``cdp.egress``) is only Chrome's per-context proxy setting, and Chrome does
not always use it: WebRTC sends UDP itself, a restarted network service forgets the proxy of every
existing context, and Chrome's own background fetches never had one. A browser in a namespace whose
only interface is its own loopback has no route anywhere, so none of that can leave: the one thing
it can reach is a gate.

How, without a relay process: a socket belongs to the namespace it was *created* in, whichever
process or thread later accepts on it. One dedicated thread of the worker ``unshare``\\ s a fresh
network namespace (``CLONE_NEWNET`` applies to the calling thread only), brings its ``lo`` up, and
stays there for the namespace's life; every gate's listening socket is made by that thread, so it
listens on the *namespace's* 127.0.0.1. The worker's event loop accepts on it as on any socket and
dials the judged destination from the worker's own namespace. Chrome joins the namespace with
``setns`` in its launch preexec. The namespace ends when its thread and every browser in it are gone.

Creating a network namespace needs ``CAP_SYS_ADMIN`` (root, as CI and the dev machine run). A worker
without it (the Docker image's non-root user) gets the same from a user namespace, where the host allows
unprivileged ones (as Chrome's own sandbox needs them anyway): a small child process
(``cdp/netns_holder.py``) unshares a user namespace with a network namespace and makes the gates'
listening sockets on request, passing them back over a socket pair (``SCM_RIGHTS``); Chrome joins its
user namespace, then its network namespace. Where both are refused (a seccomp filter, a kernel that
forbids user namespaces), ``create`` raises ``NamespaceUnavailable`` with the kernel's reasons, and the
pool falls back (``cdp.isolation``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cdp.errors import CDPException
from cdp.netns_holder import CLONE_NEWNET, CLONE_NEWUSER

if TYPE_CHECKING:  # the confinement module builds on this one; it only hands its user over
    from cdp.confinement import ChromeUser

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


class NamespaceUnavailable(CDPException):
    """The host refuses a new network namespace; ``reason`` is the kernel's word for it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"cannot create a network namespace for the browsers: {reason}")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


class BrowserNetwork:
    """One loopback-only network namespace: ``listen()`` makes sockets in it, ``join`` puts a child in it.

    ``create()`` it once per pool, ``close()`` it when the pool closes. ``how`` says which way it was made.
    """

    def __init__(self, executor: concurrent.futures.ThreadPoolExecutor, fd: int, *, how: str,
                 user_fd: int | None = None, holder: _Holder | None = None) -> None:
        self._executor = executor  # one thread: makes the sockets (in the namespace, or by asking the holder)
        self.fd = fd  # the namespace (/proc/.../ns/net), kept open: setns needs it
        self.user_fd = user_fd  # the holder's user namespace, joined first (a worker that is not root)
        self.inode = os.fstat(fd).st_ino
        self.how = how
        self._holder = holder
        self._setns = _libc().setns  # resolved now: a preexec must not load libraries after fork

    def __repr__(self) -> str:
        return f"<BrowserNetwork net:[{self.inode}] {self.how}>"

    @classmethod
    def create(cls, also: ChromeUser | None = None) -> BrowserNetwork:
        """A new namespace with ``lo`` up: made by a thread of ours where we may (root, CAP_SYS_ADMIN),
        else held by a child process in a user namespace of its own, which also maps ``also`` (the uid
        and gid a root worker runs Chrome as); ``NamespaceUnavailable`` when the host allows neither."""
        try:
            return cls._by_thread()
        except NamespaceUnavailable as first:
            try:
                return cls._by_holder(also)
            except NamespaceUnavailable as second:
                raise NamespaceUnavailable(f"{first.reason}; and in a user namespace: {second.reason}") from None

    @classmethod
    def _by_thread(cls) -> BrowserNetwork:
        entered: dict[str, object] = {}

        def enter() -> None:
            try:
                entered["fd"] = _unshare_with_loopback()
            except OSError as exc:
                entered["error"] = exc

        executor = concurrent.futures.ThreadPoolExecutor(1, "browserd-netns", initializer=enter)
        try:
            executor.submit(int).result()  # starts the thread, which runs ``enter`` first
            error = entered.get("error")
            if isinstance(error, OSError):
                raise NamespaceUnavailable(f"unshare(CLONE_NEWNET): {os.strerror(error.errno or 0)}"
                                           + _hint(error.errno))
            return cls(executor, int(entered["fd"]), how="made by the worker (root)")  # type: ignore[call-overload]
        except BaseException:
            executor.shutdown(wait=False)
            raise

    @classmethod
    def _by_holder(cls, also: ChromeUser | None) -> BrowserNetwork:
        holder = _Holder.start(also)
        try:
            user_fd = os.open(f"/proc/{holder.proc.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
            fd = os.open(f"/proc/{holder.proc.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            holder.stop()
            raise NamespaceUnavailable(f"cannot open the holder's namespaces: {exc}") from exc
        executor = concurrent.futures.ThreadPoolExecutor(1, "browserd-netns")
        return cls(executor, fd, how="held in a user namespace (not root)", user_fd=user_fd, holder=holder)

    async def listen(self, host: str = "127.0.0.1", backlog: int = 128) -> socket.socket:
        """A TCP socket listening on ``host`` (a free port) inside the namespace, non-blocking."""
        make = self._holder.listener if self._holder is not None else functools.partial(_listening_socket, host, backlog)
        return await asyncio.wrap_future(self._executor.submit(make))

    def join(self) -> None:
        """Move the calling (freshly forked, single-threaded) process into the namespace: a preexec.
        A held namespace belongs to the holder's user namespace, which is joined first (its owner, us,
        may: the child then has the capabilities there that setns into the network namespace needs)."""
        if self.user_fd is not None and self._setns(self.user_fd, CLONE_NEWUSER) != 0:
            raise OSError(ctypes.get_errno(), "setns(CLONE_NEWUSER) into the browsers' user namespace failed")
        if self._setns(self.fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns(CLONE_NEWNET) into the browsers' namespace failed")

    def interfaces(self) -> list[str]:
        """The namespace's interface names (``lo`` only, unless someone added one)."""
        if self._holder is not None:
            return self._executor.submit(self._holder.interfaces).result()
        return self._executor.submit(lambda: [name for _, name in socket.if_nameindex()]).result()

    def close(self) -> None:
        """Let the namespace go (it lives on while a browser is still in it)."""
        self._executor.shutdown(wait=False)
        for fd in (self.fd, self.user_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self._holder is not None:
            self._holder.stop()


class _Holder:
    """The child process holding a user + network namespace for a worker that is not root
    (``cdp/netns_holder.py``), and our end of its control socket."""

    def __init__(self, proc: subprocess.Popen[bytes], control: socket.socket) -> None:
        self.proc = proc
        self.control = control

    @classmethod
    def start(cls, also: ChromeUser | None) -> _Holder:
        ours, theirs = socket.socketpair()
        try:
            proc = subprocess.Popen([sys.executable, "-I", "-S", str(Path(__file__).with_name("netns_holder.py")),
                                     str(theirs.fileno())], pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                    env={"PATH": os.defpath}, start_new_session=True)
        except OSError as exc:
            ours.close()
            raise NamespaceUnavailable(f"cannot start the namespace holder: {exc}") from exc
        finally:
            theirs.close()
        holder = cls(proc, ours)
        ours.settimeout(10)
        try:
            holder._expect(b"U", "unshare(CLONE_NEWUSER|CLONE_NEWNET)")
            holder._map(also)
            ours.send(b"M")
            holder._expect(b"R", "bringing up its loopback")
        except BaseException:
            holder.stop()
            raise
        return holder

    def _expect(self, word: bytes, step: str) -> None:
        try:
            answer = self.control.recv(256)
        except OSError as exc:
            raise NamespaceUnavailable(f"the namespace holder did not answer: {exc}") from exc
        if answer != word:
            why = answer[1:].decode(errors="replace") if answer.startswith(b"E") else "the holder exited"
            raise NamespaceUnavailable(f"{step}: {why}")

    def _map(self, also: ChromeUser | None) -> None:
        """Map our uid and gid into the holder's user namespace, and ``also`` (Chrome's user, for a root
        worker: mapping another id needs CAP_SETUID/CAP_SETGID here, which only root has). Without
        ``also`` groups are denied there, as an unprivileged map requires."""
        uids, gids = {os.geteuid()}, {os.getegid()}
        if also:
            uids.add(also.uid)
            gids.add(also.gid)
        steps = [] if also else [("setgroups", "deny")]
        steps += [("uid_map", "".join(f"{i} {i} 1\n" for i in sorted(uids))),
                  ("gid_map", "".join(f"{i} {i} 1\n" for i in sorted(gids)))]
        for name, text in steps:
            try:
                with open(f"/proc/{self.proc.pid}/{name}", "w") as fh:
                    fh.write(text)
            except OSError as exc:
                raise NamespaceUnavailable(f"writing the holder's {name}: {exc.strerror}") from exc

    def listener(self) -> socket.socket:
        self.control.send(b"L")
        _, fds, _, _ = socket.recv_fds(self.control, 16, 1)
        if not fds:
            raise OSError("the namespace holder sent no socket (it exited?)")
        sock = socket.socket(fileno=fds[0])
        sock.setblocking(False)
        return sock

    def interfaces(self) -> list[str]:
        self.control.send(b"I")
        return self.control.recv(4096).decode().split(",")

    def stop(self) -> None:
        self.control.close()  # the holder exits at the end of its control socket
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _unshare_with_loopback() -> int:
    libc = _libc()
    if libc.unshare(CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(probe, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, _SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | _IFF_UP))
    return os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)


def _listening_socket(host: str, backlog: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _hint(code: int | None) -> str:
    if code == errno.EPERM:
        return " (needs CAP_SYS_ADMIN: run the worker as root, or give its container that capability)"
    if code == errno.ENOSPC:
        return " (user.max_net_namespaces reached)"
    return ""
