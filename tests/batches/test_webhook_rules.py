"""Webhook rules without a stack: the signature scheme and its replay window, which addresses a
receiver may have, and delivery judged on the resolved address (no connection to a refused one)."""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from config import get_settings
from workers.jobs.webhooks.destinations import address_refusal, networks, url_refusal
from tests.support.redis_server import redis_server
from workers import webhooks
from workers.webhooks import (
    ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    ReceiverRefused,
    deliver_webhook,
    headers_for,
    resolve_receiver,
    sign,
    verify,
)

SECRET = "whsec-test"
BODY = b'{"event":"job.finished","delivery_id":"d1"}'


def test_signature_covers_id_timestamp_and_body() -> None:
    headers = headers_for("job.finished", "d1", BODY, SECRET)
    assert headers[SIGNATURE_HEADER].startswith("v1,") and headers[ID_HEADER] == "d1"
    assert verify(SECRET, headers, BODY)
    assert verify(SECRET, {k.upper(): v for k, v in headers.items()}, BODY)  # header names are case-blind
    assert not verify("another-secret", headers, BODY)
    assert not verify(SECRET, headers, BODY + b" ")
    assert not verify(SECRET, {**headers, ID_HEADER: "d2"}, BODY)
    assert not verify(SECRET, {**headers, TIMESTAMP_HEADER: str(int(headers[TIMESTAMP_HEADER]) + 1)}, BODY)
    assert not verify(SECRET, {k: v for k, v in headers.items() if k != ID_HEADER}, BODY)
    assert not verify(SECRET, {}, BODY)


def test_verify_refuses_old_and_future_timestamps() -> None:
    now = int(time.time())
    for age, ok in [(0, True), (299, True), (-299, True), (301, False), (-301, False), (365 * 86400, False)]:
        timestamp = str(now - age)
        headers = {ID_HEADER: "d1", TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(SECRET, "d1", timestamp, BODY)}
        assert verify(SECRET, headers, BODY, now=now) is ok, age
    timestamp = str(now - 3600)
    headers = {ID_HEADER: "d1", TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(SECRET, "d1", timestamp, BODY)}
    assert verify(SECRET, headers, BODY, now=now, tolerance=7200)
    assert not verify(SECRET, {**headers, TIMESTAMP_HEADER: "-5"}, BODY)
    assert not verify(SECRET, {**headers, TIMESTAMP_HEADER: "soon"}, BODY)


def test_any_of_several_signatures_may_match() -> None:
    """Key rotation: the sender signs with old and new keys, space-separated."""
    timestamp = str(int(time.time()))
    both = f"{sign('old', 'd1', timestamp, BODY)} {sign(SECRET, 'd1', timestamp, BODY)}"
    assert verify(SECRET, {ID_HEADER: "d1", TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: both}, BODY)


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("127.9.9.9", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("192.168.1.1", "private"), ("fd12::1", "unique local"),
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("100.64.0.1", "carrier-grade NAT"),
    ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"), ("240.0.0.1", "reserved"),
])
def test_non_public_addresses_are_refused(address: str, kind: str) -> None:
    reason = address_refusal(ipaddress.ip_address(address))
    assert reason is not None and kind in reason


def test_public_addresses_pass_and_an_allow_list_opens_a_network() -> None:
    assert address_refusal(ipaddress.ip_address("93.184.216.34")) is None
    assert address_refusal(ipaddress.ip_address("2606:2800:220:1::1")) is None
    opened = networks(["127.0.0.1/32", "10.8.0.0/16"])
    assert address_refusal(ipaddress.ip_address("127.0.0.1"), opened) is None
    assert address_refusal(ipaddress.ip_address("10.8.3.4"), opened) is None
    assert address_refusal(ipaddress.ip_address("10.9.0.1"), opened) is not None
    assert address_refusal(ipaddress.ip_address("127.0.0.2"), opened) is not None


def test_url_literals_and_localhost_are_judged_without_dns() -> None:
    assert url_refusal("http://localhost:8080/h") is not None
    assert url_refusal("http://api.localhost/h") is not None
    assert url_refusal("http://[::1]/h") is not None
    assert url_refusal("https://hooks.example/h") is None  # a name: judged when delivering
    assert url_refusal("http://127.0.0.1:9/h", networks(["127.0.0.1/32"])) is None


@pytest.mark.parametrize(("address", "kind"), [
    ("64:ff9b::a9fe:a9fe", "link-local"), ("64:ff9b::7f00:1", "loopback"),  # NAT64, well-known prefix
    ("64:ff9b:1::a00:1", "private"), ("64:ff9b:1::808:808", "local-use NAT64"),  # NAT64, local-use prefix
    ("::ffff:0:a9fe:a9fe", "link-local"),  # SIIT
    ("::a9fe:a9fe", "link-local"), ("::808:808", "IPv4-compatible"),  # IPv4-compatible, closed in itself
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo, client 127.0.0.1
    ("fec0::1", "site-local"),
])
def test_an_ipv6_address_carrying_a_closed_ipv4_one_is_refused(address: str, kind: str) -> None:
    """Issue 22, finding 6: a gateway (NAT64, SIIT, a Teredo relay) turns these into the IPv4 address."""
    reason = address_refusal(ipaddress.ip_address(address))
    assert reason is not None and kind in reason
    assert url_refusal(f"http://[{address}]:9/h") is not None


@pytest.mark.parametrize("host", ["2130706433", "0x7f.0.0.1", "0177.0.0.1", "127.1", "0x7f000001",
                                  "[64:ff9b::7f00:1]", "[::7f00:1]", "[fec0::1]"])
def test_a_url_literal_in_any_spelling_is_judged_as_the_address_it_means(host: str) -> None:
    assert url_refusal(f"http://{host}:9/h") is not None


def test_an_opened_network_opens_the_spellings_that_are_its_addresses() -> None:
    """127.0.0.1/32 opens 2130706433 and NAT64's 64:ff9b::7f00:1, not the deprecated ::7f00:1."""
    opened = networks(["127.0.0.1/32"])
    for host in ("2130706433", "127.1", "[64:ff9b::7f00:1]", "[::ffff:0:7f00:1]"):
        assert url_refusal(f"http://{host}:9/h", opened) is None, host
    assert url_refusal("http://[::7f00:1]:9/h", opened) is not None


def test_delivery_to_a_nat64_literal_of_loopback_is_refused_unconnected() -> None:
    with pytest.raises(ReceiverRefused, match="resolves to 64:ff9b::7f00:1, a loopback address"):
        resolve_receiver("http://[64:ff9b::7f00:1]:9/hook", [])


def test_a_name_is_judged_on_what_it_resolves_to() -> None:
    """'localhost' is a DNS name resolving to loopback: refused before any connection."""
    with pytest.raises(ReceiverRefused, match="resolves to .*loopback"):
        resolve_receiver("http://localhost:9/hook", [])
    with pytest.raises(ReceiverRefused, match="not an http"):
        resolve_receiver("ftp://hooks.example/x", [])
    opened = resolve_receiver("http://localhost:9/hook", networks(["127.0.0.0/8", "::1/128"]))
    assert opened.address.is_loopback and opened.host == "localhost"
    assert opened.pinned_url().endswith(":9/hook") and "localhost" not in opened.pinned_url()


class Sink:
    """A receiver on 127.0.0.1 answering 204 (or ``status``), keeping each POST's headers and body."""

    def __init__(self) -> None:
        self.status = 204
        self.posts: list[dict[str, str]] = []
        self.bodies: list[bytes] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                sink.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                sink.posts.append(dict(self.headers))
                self.send_response(sink.status)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    thread = threading.Thread(target=s.httpd.serve_forever, daemon=True)
    thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()
    thread.join(5)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("BROWSERD_WEBHOOK_ALLOWED_NETWORKS", "127.0.0.1/32")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_delivery_to_a_name_resolving_to_loopback_is_refused_unconnected(sink: Sink) -> None:
    get_settings.cache_clear()
    status = deliver_webhook.apply(args=(f"http://localhost:{sink.port}/h", "job.finished", {})).get()
    assert status == 0 and sink.posts == []


def test_delivery_keeps_the_name_as_host_and_takes_a_given_delivery_id(sink: Sink, opened: None,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with redis_server() as server:  # a given delivery id is posted once: the guard keeps ids in Redis
        monkeypatch.setenv("BROWSERD_REDIS_URL", server.url)
        monkeypatch.setattr(webhooks, "_guard", None)
        get_settings.cache_clear()
        status = deliver_webhook.apply(args=(f"http://127.0.0.1:{sink.port}/h", "job.finished", {}),
                                       kwargs={"delivery_id": "outbox-7"}).get()
        again = deliver_webhook.apply(args=(f"http://127.0.0.1:{sink.port}/h", "job.finished", {}),
                                      kwargs={"delivery_id": "outbox-7"}).get()
        monkeypatch.setattr(webhooks, "_guard", None)
    assert again == 0 and len(sink.posts) == 1, "the same delivery id is not posted twice"
    assert status == 204 and sink.posts[0][ID_HEADER] == "outbox-7"
    assert sink.posts[0]["Host"] == f"127.0.0.1:{sink.port}"


@pytest.mark.parametrize("status", [410, 503])
def test_a_receivers_token_is_masked_in_the_delivery_log(sink: Sink, opened: None, status: int,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    sink.status = status
    url = f"http://127.0.0.1:{sink.port}/h?token=hook-secret-1&sig=hook-sig-2&job=7"
    with caplog.at_level(logging.WARNING, logger="browserd.webhooks"):
        result = deliver_webhook.apply(args=(url, "job.finished", {}))
    assert len(sink.posts) >= 1
    assert f"127.0.0.1:{sink.port}/h?token=" in caplog.text and "job=7" in caplog.text
    assert "hook-secret-1" not in caplog.text and "hook-sig-2" not in caplog.text
    assert "hook-secret-1" not in repr(result.result)
