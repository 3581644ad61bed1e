"""The holder of a loopback-only network namespace for a worker that is not root (run as a script).

``python netns_holder.py FD``: unshares a user namespace with a network namespace, says ``U`` on the
control socket ``FD`` and waits for ``M`` (its worker has written the uid and gid maps), brings ``lo``
up, says ``R``, then answers requests:
``L`` -> a TCP socket listening on 127.0.0.1 (a free port) inside the namespace, passed back as a file
descriptor (``SCM_RIGHTS``); ``I`` -> the namespace's interface names. It exits when the control
socket closes (its worker is gone). See ``cdp.netns``; standard library only, run without the package.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000


def main(fd: int) -> int:
    control = socket.socket(fileno=fd)
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        control.send(b"E" + os.strerror(ctypes.get_errno()).encode())
        return 1
    control.send(b"U")  # the worker writes our uid and gid maps from outside (it may map more than we may)
    if control.recv(16) != b"M":
        return 1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(probe, 0x8913, request))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(probe, 0x8914, struct.pack("16sh", b"lo", flags | 0x1))  # SIOCSIFFLAGS, IFF_UP
    control.send(b"R")
    while request := control.recv(16):
        if request == b"L":
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
                listener.bind(("127.0.0.1", 0))
                listener.listen(128)
                socket.send_fds(control, [b"S"], [listener.fileno()])
        elif request == b"I":
            control.send(",".join(name for _, name in socket.if_nameindex()).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
