"""Secure defaults: the API does not listen beyond loopback without a token, an empty token is no
token, CORS is off unless origins are listed, and the compose stack demands its secrets."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from config import ConfigError, Settings, load_settings
from daemon.api import create_app
from daemon.api.exposure import ExposedWithoutToken, check_exposure, is_loopback
from tests.queue.stack import Proc, wait_until
from tests.support.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
BOUND = "http://127.0.0.1:8080"  # BROWSERD_API_HOST:BROWSERD_API_PORT by default


def _serve(host: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERD_")}
    return subprocess.run([sys.executable, "-m", "daemon", "serve", "--host", host, "--port", str(free_port())],
                          env={**clean, "PYTHONPATH": str(ROOT), "BROWSERD_REDIS_URL": "redis://127.0.0.1:1/0", **env},
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.e2e  # python -m daemon serve
@pytest.mark.parametrize("token", [None, "", "   "])
def test_serve_refuses_a_public_address_without_a_token(token: str | None) -> None:
    """Refused before binding: nothing listens on 0.0.0.0 even for a moment."""
    done = _serve("0.0.0.0", **({} if token is None else {"BROWSERD_API_TOKEN": token}))
    assert done.returncode == 2, done.stderr
    assert "refusing to serve the API on 0.0.0.0 without a token" in done.stderr
    assert "BROWSERD_API_TOKEN" in done.stderr and "BROWSERD_API_INSECURE" in done.stderr


@pytest.mark.e2e  # python -m daemon serve
def test_serve_answers_only_the_host_it_binds_on_every_route(tmp_path: Path) -> None:
    """``serve --host/--port`` decide the allowed Host, not BROWSERD_API_HOST: here the environment says
    0.0.0.0 (which used to turn /mcp's own check off) while serve binds loopback without a token."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERD_")}
    env = {**clean, "PYTHONPATH": str(ROOT), "BROWSERD_REDIS_URL": "redis://127.0.0.1:1/0", "BROWSERD_API_HOST": "0.0.0.0"}
    api = Proc("api", [sys.executable, "-m", "daemon", "serve", "--host", "127.0.0.1", "--port", str(port)], env, tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        def up() -> bool:
            assert api.alive, api.log()
            with contextlib.suppress(httpx.TransportError):
                return httpx.get(url + "/healthz", timeout=2).status_code == 200
            return False

        wait_until(up, 60, "serve to answer")
        mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        mcp_headers = {"Accept": "application/json, text/event-stream"}
        with httpx.Client(base_url=url, timeout=30) as http:
            for rebound in (f"evil.example:{port}", f"0.0.0.0:{port}"):
                for resp in (http.post("/v1/jobs", json={"task": "x"}, headers={"Host": rebound}),
                             http.get("/ui/", headers={"Host": rebound}),
                             http.post("/mcp", json=mcp, headers={**mcp_headers, "Host": rebound})):
                    assert resp.status_code == 421 and "BROWSERD_ALLOWED_HOSTS" in resp.json()["message"], resp.text
            assert http.get("/ui", headers={"Host": f"localhost:{port}"}).status_code == 307  # no Redis needed
            tools = http.post("/mcp", json=mcp, headers=mcp_headers)
            assert tools.status_code == 200 and "submit_job" in tools.text
    finally:
        api.stop()


def test_an_empty_token_is_no_token() -> None:
    assert load_settings(api_token="").api_token is None
    assert load_settings(api_token="  ").api_token is None
    assert load_settings(api_token="s3cret").api_token.get_secret_value() == "s3cret"


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("192.168.1.2", False), ("api.example", False),
    ("", False),
])
def test_loopback_is_judged_on_the_address(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_exposure_rules(caplog: pytest.LogCaptureFixture) -> None:
    check_exposure("127.0.0.1", Settings(api_token=None))
    check_exposure("0.0.0.0", Settings(api_token="t"))
    with pytest.raises(ExposedWithoutToken, match="10.1.2.3"):
        check_exposure("10.1.2.3", Settings(api_token=None))
    assert issubclass(ExposedWithoutToken, ConfigError)
    with caplog.at_level(logging.WARNING, logger="browserd.api"):
        check_exposure("0.0.0.0", Settings(api_token=None, api_insecure=True))
    assert "NO TOKEN" in caplog.text and "BROWSERD_API_INSECURE=1" in caplog.text


@pytest.mark.parametrize(("value", "says"), [
    ("*", "every web page"), ("console.example", "not an origin"), ("https://a.example/path", "not an origin"),
])
def test_bad_cors_origins_are_refused(value: str, says: str) -> None:
    with pytest.raises(ConfigError, match="BROWSERD_CORS_ORIGINS") as err:
        load_settings(cors_origins=value)
    assert says in str(err.value)


def test_cors_answers_only_the_listed_origins() -> None:
    app = create_app(Settings(redis_url="redis://127.0.0.1:1/0", cors_origins="https://console.example"))
    client = TestClient(app, base_url=BOUND)  # the address the API binds: another Host gets 421 (config.api_hosts)
    ask = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}
    ok = client.options("/v1/jobs", headers={"Origin": "https://console.example", **ask})
    assert ok.headers.get("access-control-allow-origin") == "https://console.example"
    evil = client.options("/v1/jobs", headers={"Origin": "http://evil.example", **ask})
    assert "access-control-allow-origin" not in evil.headers
    off = TestClient(create_app(Settings(redis_url="redis://127.0.0.1:1/0")), base_url=BOUND)
    assert "access-control-allow-origin" not in off.options(
        "/v1/jobs", headers={"Origin": "https://console.example", **ask}).headers


def test_compose_demands_the_token_and_the_grafana_password() -> None:
    compose = (ROOT / "docker" / "docker-compose.yml").read_text()
    if shutil.which("docker-compose"):
        clean = {k: v for k, v in os.environ.items() if k not in ("BROWSERD_API_TOKEN", "GRAFANA_ADMIN_PASSWORD")}
        done = subprocess.run(["docker-compose", "-f", "docker-compose.yml", "config"], cwd=ROOT / "docker",
                              env=clean, capture_output=True, text=True, timeout=120)
        assert done.returncode != 0 and "BROWSERD_API_TOKEN" in done.stderr, done.stderr
    assert "${BROWSERD_API_TOKEN:?" in compose
    assert "GF_SECURITY_ADMIN_PASSWORD: ${GRAFANA_ADMIN_PASSWORD:?" in compose
    assert "BROWSERD_API_TOKEN:-" not in compose and "GRAFANA_ADMIN_PASSWORD:-" not in compose
