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

Creating a network namespace needs ``CAP_SYS_ADMIN`` (root, as CI and the dev machine run). Where it
is refused (not root, a container without the capability, a seccomp filter), ``create`` raises
``NamespaceUnavailable`` with the kernel's reason, and the pool falls back (``cdp.isolation``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import errno
import fcntl
import os
import socket
import struct

from cdp.errors import CDPException

CLONE_NEWNET = 0x40000000
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

    ``create()`` it once per pool, ``close()`` it when the pool closes.
    """

    def __init__(self, executor: concurrent.futures.ThreadPoolExecutor, fd: int, inode: int) -> None:
        self._executor = executor
        self.fd = fd  # /proc/thread-self/ns/net of the namespace's thread, kept open (setns needs it)
        self.inode = inode
        self._setns = _libc().setns  # resolved now: a preexec must not load libraries after fork

    def __repr__(self) -> str:
        return f"<BrowserNetwork net:[{self.inode}]>"

    @classmethod
    def create(cls) -> BrowserNetwork:
        """A new namespace with ``lo`` up, or ``NamespaceUnavailable``."""
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
            ns_fd = int(entered["fd"])  # type: ignore[call-overload]
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(executor, ns_fd, os.fstat(ns_fd).st_ino)

    async def listen(self, host: str = "127.0.0.1", backlog: int = 128) -> socket.socket:
        """A TCP socket listening on ``host`` (a free port) inside the namespace, non-blocking."""
        return await asyncio.wrap_future(self._executor.submit(_listening_socket, host, backlog))

    def join(self) -> None:
        """Move the calling (freshly forked, single-threaded) process into the namespace: a preexec."""
        if self._setns(self.fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns(CLONE_NEWNET) into the browsers' namespace failed")

    def interfaces(self) -> list[str]:
        """The namespace's interface names (``lo`` only, unless someone added one)."""
        return self._executor.submit(lambda: [name for _, name in socket.if_nameindex()]).result()

    def close(self) -> None:
        """Let the namespace go (it lives on while a browser is still in it)."""
        self._executor.shutdown(wait=False)
        try:
            os.close(self.fd)
        except OSError:
            pass


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
