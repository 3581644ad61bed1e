"""Alert rules under Prometheus's own test runner, and Alertmanager's inhibit rule in a real Alertmanager.

``promtool`` (Debian package ``prometheus``) and Alertmanager (``prometheus-alertmanager``) are
installed by ``.ci/setup``; these tests fail, not skip, without them.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.redis_server import free_port

DOCKER = Path(__file__).resolve().parents[2] / "docker"
RULES = DOCKER / "prometheus" / "alerts.yml"
RULE_TESTS = DOCKER / "prometheus" / "alerts.test.yml"
ALERTMANAGER_CONFIG = DOCKER / "alertmanager" / "alertmanager.yml"


def tool(*names: str) -> str:
    for name in names:
        if path := shutil.which(name):
            return path
    raise AssertionError(f"{' or '.join(names)} not found: run `bash .ci/setup` (it installs the OS packages)")


def alert_names() -> set[str]:
    return {rule["alert"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]}


def test_every_rule_has_a_firing_case_and_a_quiet_case() -> None:
    suite = yaml.safe_load(RULE_TESTS.read_text())
    assert suite["rule_files"] == [RULES.name]
    cases = [case for test in suite["tests"] for case in test.get("alert_rule_test", [])]
    fired = {c["alertname"] for c in cases if c["exp_alerts"]}
    quiet = {c["alertname"] for c in cases if not c["exp_alerts"]}
    assert fired == alert_names(), sorted(alert_names() - fired)
    assert quiet == alert_names(), sorted(alert_names() - quiet)


def test_promtool_test_rules() -> None:
    done = subprocess.run([tool("promtool"), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_alertmanager_config_checks() -> None:
    done = subprocess.run([tool("amtool"), "check-config", str(ALERTMANAGER_CONFIG)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 inhibit rules" in done.stdout


def test_prometheus_sends_alerts_to_alertmanager() -> None:
    config = yaml.safe_load((DOCKER / "prometheus" / "prometheus.yml").read_text())
    (manager,) = config["alerting"]["alertmanagers"]
    assert manager["static_configs"][0]["targets"] == ["alertmanager:9093"]


@dataclass
class Running:
    url: str  # Alertmanager's
    received: queue.Queue[dict[str, Any]]  # the receiver's printed lines, parsed


def read_lines(proc: subprocess.Popen[str], into: queue.Queue[dict[str, Any]]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        into.put(json.loads(line))


def stop(proc: subprocess.Popen[Any]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_http(url: str, proc: subprocess.Popen[Any], what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{what} exited"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{what} did not answer at {url}")


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[Running]:
    """docker/alert_receiver.py and a real Alertmanager with the stack's config, both on loopback.

    The copy differs only where it must: the receiver's address, and grouping waits of a second
    (the stack waits 30 s before the first notification).
    """
    receiver_port, port = free_port(), free_port()
    receiver = subprocess.Popen([sys.executable, str(DOCKER / "alert_receiver.py"), str(receiver_port), "127.0.0.1"],
                                stdout=subprocess.PIPE, text=True)
    config = yaml.safe_load(ALERTMANAGER_CONFIG.read_text())
    config["receivers"][0]["webhook_configs"][0]["url"] = f"http://127.0.0.1:{receiver_port}/alerts"
    config["route"].update(group_wait="1s", group_interval="1s")
    (tmp_path / "alertmanager.yml").write_text(yaml.safe_dump(config))
    manager = subprocess.Popen(
        [tool("alertmanager", "prometheus-alertmanager"), f"--config.file={tmp_path / 'alertmanager.yml'}",
         f"--storage.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
         "--cluster.listen-address="],  # no gossip port: a single instance
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    received: queue.Queue[dict[str, Any]] = queue.Queue()
    threading.Thread(target=read_lines, args=(receiver, received), daemon=True).start()
    try:
        assert "listening" in received.get(timeout=30)
        wait_http(url + "/-/ready", manager, "alertmanager")
        yield Running(url, received)
    finally:
        stop(manager)
        stop(receiver)


def post_alerts(url: str, *names: str) -> None:
    now = datetime.now(UTC)
    alerts = [{"labels": {"alertname": name, "severity": "critical"}, "annotations": {"summary": name},
               "startsAt": now.isoformat(), "endsAt": (now + timedelta(minutes=5)).isoformat()} for name in names]
    request = urllib.request.Request(url + "/api/v2/alerts", data=json.dumps(alerts).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200


def states(url: str) -> dict[str, dict[str, Any]]:
    with urllib.request.urlopen(url + "/api/v2/alerts", timeout=10) as reply:
        return {a["labels"]["alertname"]: a["status"] for a in json.loads(reply.read())}


def test_a_redis_outage_pages_once(alertmanager: Running) -> None:
    """RedisDown and NoWorkers together: NoWorkers is suppressed, only RedisDown reaches the receiver."""
    post_alerts(alertmanager.url, "BrowserdRedisDown", "BrowserdNoWorkers", "BrowserdCrashStorm")
    deadline = time.monotonic() + 30
    while (found := states(alertmanager.url)).get("BrowserdNoWorkers", {}).get("state") != "suppressed":
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    assert found["BrowserdNoWorkers"]["inhibitedBy"]
    assert found["BrowserdRedisDown"]["state"] == "active"
    assert found["BrowserdCrashStorm"]["state"] == "active"  # the rule silences NoWorkers only

    received: set[str] = set()
    while received != {"BrowserdRedisDown", "BrowserdCrashStorm"}:
        try:
            line = alertmanager.received.get(timeout=30)
        except queue.Empty:
            raise AssertionError(f"the receiver got only {sorted(received)}") from None
        assert line["status"] == "firing"
        received.add(line["alertname"])
    time.sleep(3)  # three more group intervals: a NoWorkers notification would have followed by now
    late = [alertmanager.received.get_nowait()["alertname"] for _ in range(alertmanager.received.qsize())]
    assert "BrowserdNoWorkers" not in received | set(late)
