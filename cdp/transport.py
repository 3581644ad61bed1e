"""How CDP messages travel: a pipe to a browser we launched, or a websocket to one we attach to.

A ``Connection`` speaks CDP; a transport only moves whole JSON texts. Two exist:

``PipeTransport``
    Chrome started with ``--remote-debugging-pipe`` reads commands from its fd 3 and writes
    replies and events to its fd 4, each message ended by a NUL byte (the transport Playwright and
    Puppeteer use). Nothing listens on a port, so no page, and no other local process, can reach
    the browser's debugger: ``http://127.0.0.1:<port>/json/list`` does not exist.

``WebSocketTransport``
    For browsers browserd did not launch (``BROWSERD_CDP_URLS``). Their DevTools endpoint gives
    full control of every context in that browser: it must not be reachable from any page the
    browser loads (keep it off the network the browser browses, and off loopback of a host whose
    pages may reach loopback).
"""

from __future__ import annotations

import asyncio
import os
from typing import Protocol

import websockets
from websockets.asyncio.client import ClientConnection

from cdp.errors import BrowserGone

# A message can be a DOM snapshot of tens of MB; the reader's buffer must be allowed to grow.
MAX_MESSAGE = 1 << 31


class TransportClosed(Exception):
    """The other end is gone; ``reason`` says how."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Transport(Protocol):
    """Moves whole CDP messages (JSON texts) in both directions."""

    description: str

    async def send(self, message: str) -> None: ...

    async def recv(self) -> str:
        """The next message; raises ``TransportClosed`` at the end."""
        ...

    async def close(self) -> None: ...


class WebSocketTransport:
    """A DevTools websocket (``ws://host:port/devtools/browser/…``)."""

    def __init__(self, ws: ClientConnection, url: str) -> None:
        self._ws = ws
        self.description = url

    @classmethod
    async def connect(cls, ws_url: str, *, timeout: float = 10.0) -> WebSocketTransport:
        try:
            ws = await websockets.connect(
                ws_url,
                max_size=None,  # a DOM snapshot of a large page is tens of MB
                compression=None,
                open_timeout=timeout,
                ping_interval=None,  # liveness comes from the process watch and socket close
                close_timeout=1,
            )
        except (OSError, asyncio.TimeoutError, websockets.InvalidHandshake) as exc:
            raise BrowserGone(f"cannot connect to {ws_url}: {exc}") from exc
        return cls(ws, ws_url)

    async def send(self, message: str) -> None:
        try:
            await self._ws.send(message)
        except websockets.ConnectionClosed as exc:
            raise TransportClosed(f"websocket closed: {exc}") from exc

    async def recv(self) -> str:
        try:
            message = await self._ws.recv()
        except websockets.ConnectionClosed as exc:
            raise TransportClosed(f"websocket closed ({exc.rcvd.code if exc.rcvd else 'no close frame'})") from exc
        return message if isinstance(message, str) else message.decode()

    async def close(self) -> None:
        await self._ws.close()


class PipeTransport:
    """The two pipes of a Chrome started with ``--remote-debugging-pipe`` (our ends of them)."""

    def __init__(self, reader: asyncio.StreamReader, feed: asyncio.ReadTransport, writer: asyncio.StreamWriter,
                 description: str) -> None:
        self._reader = reader
        self._feed = feed
        self._writer = writer
        self.description = description
        self._queued: list[bytes] = []  # messages sent in this turn of the loop, written together at its end
        self._written: asyncio.Future[None] | None = None  # set once they are

    @classmethod
    async def open(cls, read_fd: int, write_fd: int, *, description: str = "pipe") -> PipeTransport:
        """Wrap our ends: ``read_fd`` carries Chrome's fd 4, ``write_fd`` feeds Chrome's fd 3.

        The transport owns both descriptors from here on.
        """
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_MESSAGE)
        feed, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb", 0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        return cls(reader, feed, writer, description)

    async def send(self, message: str) -> None:
        """Queue ``message``; every message sent in the same turn of the event loop goes to Chrome
        in one ``write`` at its end, in order. A page's burst of paused requests is answered by
        as many commands at once, and one system call each (waking Chrome's reader each time)
        was most of what answering them cost a worker (issue 27)."""
        if self._writer.is_closing():
            raise TransportClosed("pipe closed")
        self._queued.append(message.encode())
        if self._written is None:
            self._written = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(self._write_queued)
        written = self._written
        try:
            await asyncio.shield(written)  # a caller cancelled meanwhile leaves the others' write alone
            await self._writer.drain()
        except (ConnectionError, BrokenPipeError) as exc:
            raise TransportClosed(f"pipe closed: {exc}") from exc

    def _write_queued(self) -> None:
        data, self._queued = b"\0".join(self._queued) + b"\0", []
        written, self._written = self._written, None
        assert written is not None
        try:
            self._writer.write(data)
        except Exception as exc:  # the pipe closed under us: every sender of this turn hears it
            written.set_exception(exc)
            written.exception()  # retrieved here too, so a turn whose senders all left logs nothing
        else:
            written.set_result(None)

    async def recv(self) -> str:
        try:
            data = await self._reader.readuntil(b"\0")
        except asyncio.IncompleteReadError:
            raise TransportClosed("pipe closed by the browser") from None
        except (ConnectionError, OSError) as exc:
            raise TransportClosed(f"pipe failed: {exc}") from exc
        return data[:-1].decode()

    async def close(self) -> None:
        self._writer.close()
        self._feed.close()
