"""The deployment files: compose validates, Prometheus scrapes what the compose file runs, alert
rules and the Grafana dashboard are well formed and query only metrics browserd exports, and the
image is set up with the README's own commands. (No Docker engine runs here; this is what can be
checked without one.)"""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ops.test_alerts import tool
from tests.support.redis_server import free_port
from workers.jobs import metrics

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
COMPOSE = DOCKER / "docker-compose.yml"
BROWSERD_SERVICES = {"api": "serve", "worker": "worker", "beat": "beat"}
DURATION = re.compile(r"^\d+[smhd]$")
METRIC = re.compile(r"\bbrowserd_[a-z_]+\b")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    """The compose file as Compose resolves it when ``docker-compose`` is installed, else parsed here."""
    if shutil.which("docker-compose") is None:
        return load_yaml(COMPOSE)
    required = {"BROWSERD_API_TOKEN": "t", "GRAFANA_ADMIN_PASSWORD": "p"}  # compose refuses to run without them
    done = subprocess.run(["docker-compose", "-f", str(COMPOSE), "config"], capture_output=True, text=True,
                          cwd=DOCKER, timeout=120, env={**os.environ, **required})
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def command(service: dict[str, Any]) -> list[str]:
    cmd = service.get("command", [])
    return cmd.split() if isinstance(cmd, str) else [str(c) for c in cmd]


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> host path (relative ones resolved against docker/)."""
    found = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            source, target = volume.get("source", ""), volume["target"]
        else:
            source, target = volume.split(":")[:2]
        found[target] = str((DOCKER / source).resolve()) if source.startswith(".") else source
    return found


def test_compose_runs_the_stack(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"redis", "api", "worker", "beat", "prometheus", "alertmanager", "alert-receiver",
                             "redis-exporter", "grafana"}
    for name, sub in BROWSERD_SERVICES.items():
        service = services[name]
        assert command(service) == ["browserd", sub]
        assert service["environment"]["BROWSERD_REDIS_URL"] == "redis://redis:6379/0"
        assert service["build"]["dockerfile"] == "docker/Dockerfile"
        assert "redis" in service["depends_on"]
    assert services["api"]["environment"]["BROWSERD_API_HOST"] == "0.0.0.0"


def published(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(host address, container port) of each published port; "" for every interface."""
    found = []
    for port in service.get("ports", []):
        if isinstance(port, dict):  # Compose v2's long form
            found.append((port.get("host_ip", ""), str(port["target"])))
        else:
            parts = re.sub(r"\$\{[^}]*\}", "PUBLISHED", str(port)).split("/")[0].rsplit(":", 2)  # unresolved ${VAR:-n}
            found.append((parts[0] if len(parts) == 3 else "", parts[-1]))
    return found


def test_unauthenticated_services_are_published_on_loopback_only(compose: dict[str, Any]) -> None:
    """Prometheus and Alertmanager have no login: anyone reaching them reads every metric or silences alerts."""
    services = compose["services"]
    assert published(services["prometheus"]) == [("127.0.0.1", "9090")]
    assert published(services["alertmanager"]) == [("127.0.0.1", "9093")]
    for name in ("redis", "redis-exporter", "alert-receiver", "worker", "beat"):
        assert published(services[name]) == [], name
    # the API (token required) and Grafana (password required) are the ones published on every interface
    assert published(services["api"]) == [("", "8080")] and published(services["grafana"]) == [("", "3000")]


def test_workers_serve_metrics_on_their_container_network(compose: dict[str, Any]) -> None:
    """Loopback is the setting's default; Prometheus scrapes each worker container by DNS, so compose opens it."""
    assert compose["services"]["worker"]["environment"]["BROWSERD_METRICS_HOST"] == "0.0.0.0"
    assert "BROWSERD_METRICS_HOST" not in compose["services"]["api"]["environment"]


def test_workers_scale(compose: dict[str, Any]) -> None:
    """``--scale worker=N`` needs no fixed name and no host port; each worker serves metrics."""
    worker = compose["services"]["worker"]
    assert "container_name" not in worker and "ports" not in worker
    assert "worker" in " ".join(worker["healthcheck"]["test"])


def test_redis_keeps_every_job(compose: dict[str, Any]) -> None:
    redis = command(compose["services"]["redis"])
    flags = dict(zip(redis[1::2], redis[2::2]))
    assert redis[0] == "redis-server"
    assert flags["--appendonly"] == "yes"
    assert flags["--maxmemory-policy"] == "noeviction"
    assert mounts(compose["services"]["redis"])["/data"] == "redis-data"  # a named volume: AOF outlives the container


def test_prometheus_and_grafana_get_their_config(compose: dict[str, Any]) -> None:
    prometheus, grafana = (mounts(compose["services"][n]) for n in ("prometheus", "grafana"))
    assert Path(prometheus["/etc/prometheus"]) == DOCKER / "prometheus"
    alertmanager = compose["services"]["alertmanager"]
    assert Path(mounts(alertmanager)["/etc/alertmanager"]) == DOCKER / "alertmanager"
    assert "--config.file=/etc/alertmanager/alertmanager.yml" in command(alertmanager)
    receiver = compose["services"]["alert-receiver"]
    assert Path(mounts(receiver)["/opt/alert_receiver.py"]) == DOCKER / "alert_receiver.py"
    url = load_yaml(DOCKER / "alertmanager/alertmanager.yml")["receivers"][0]["webhook_configs"][0]["url"]
    assert url.startswith(f"http://alert-receiver:{command(receiver)[-1]}/")
    assert Path(grafana["/etc/grafana/provisioning"]) == DOCKER / "grafana" / "provisioning"
    dashboards = Path(grafana["/etc/grafana/dashboards"])
    provider = load_yaml(DOCKER / "grafana/provisioning/dashboards/browserd.yml")["providers"][0]
    assert provider["type"] == "file" and provider["options"]["path"] == "/etc/grafana/dashboards"
    assert (dashboards / "browserd.json").is_file()
    source = load_yaml(DOCKER / "grafana/provisioning/datasources/prometheus.yml")["datasources"][0]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"


def test_prometheus_scrapes_the_api_and_every_worker(compose: dict[str, Any]) -> None:
    config = load_yaml(DOCKER / "prometheus/prometheus.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["browserd-api"]["static_configs"][0]["targets"] == ["api:8080"]
    (sd,) = jobs["browserd-worker"]["dns_sd_configs"]
    assert sd["names"] == ["worker"] and sd["type"] == "A"
    assert str(sd["port"]) == str(compose["services"]["worker"]["environment"]["BROWSERD_METRICS_PORT"])
    for rule_file in config["rule_files"]:
        assert (DOCKER / "prometheus" / Path(rule_file).name).is_file()
        assert rule_file.startswith("/etc/prometheus/")


def balanced(expr: str) -> bool:
    depth: list[str] = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for char in re.sub(r'"[^"]*"', '""', expr):
        if char in "([{":
            depth.append(char)
        elif char in pairs and (not depth or depth.pop() != pairs[char]):
            return False
    return not depth


def assert_known_metrics(exprs: list[str]) -> None:
    used = {name for expr in exprs for name in METRIC.findall(expr)}
    assert used, "no browserd metric queried"
    unknown = used - metrics.metric_names()
    assert not unknown, f"not defined in workers/jobs/metrics.py: {sorted(unknown)}"
    assert all(balanced(e) for e in exprs), [e for e in exprs if not balanced(e)]


def test_alert_rules() -> None:
    groups = load_yaml(DOCKER / "prometheus/alerts.yml")["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names))
    assert {"BrowserdQueueGrowing", "BrowserdFailureRateHigh", "BrowserdNoWorkers", "BrowserdCrashStorm"} <= set(names)
    for rule in rules:
        assert DURATION.match(rule["for"]), rule["alert"]
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    assert_known_metrics([rule["expr"] for rule in rules])


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads((DOCKER / "grafana/dashboards/browserd.json").read_text())


def test_dashboard_file_is_what_its_script_writes(dashboard: dict[str, Any]) -> None:
    script = runpy.run_path(str(DOCKER / "grafana/dashboard.py"))
    assert json.loads(script["render"]()) == dashboard, "run: python docker/grafana/dashboard.py"


def overlaps(a: dict[str, int], b: dict[str, int]) -> bool:
    return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]


def test_dashboard_is_valid_grafana_json(dashboard: dict[str, Any]) -> None:
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["uid"] and dashboard["title"]
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    for i, p in enumerate(panels):
        grid = p["gridPos"]
        assert all(isinstance(grid[k], int) for k in "xywh") and grid["x"] + grid["w"] <= 24
        assert not any(overlaps(grid, other["gridPos"]) for other in panels[:i]), p["title"]
        if p["type"] != "row":
            assert p["type"] in {"timeseries", "stat"} and p["targets"], p["title"]
            assert all(t["refId"] and t["expr"] for t in p["targets"])
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
    used = {v for e in exprs for v in re.findall(r"\$(\w+)", e) if not v.startswith("__")}
    assert used <= variables
    assert_known_metrics(exprs)


def test_dashboard_covers_what_operators_watch(dashboard: dict[str, Any]) -> None:
    titles = " | ".join(p["title"].lower() for p in dashboard["panels"])
    for topic in ("throughput", "success rate", "by category", "queue depth", "step time", "tokens", "cost",
                  "pool health", "crashes", "live workers", "webhook backlog", "webhook attempts", "api errors",
                  "api latency", "worker cpu", "worker memory", "chrome memory per worker", "redis memory",
                  "batches and schedule runs"):
        assert topic in titles, topic


def test_dashboard_filters_by_worker_and_marks_alerts(dashboard: dict[str, Any]) -> None:
    (worker,) = [v for v in dashboard["templating"]["list"] if v["name"] == "worker"]
    assert worker["type"] == "query" and worker["includeAll"] and worker["multi"]
    assert 'job="browserd-worker"' in worker["definition"]  # the scrape job prometheus.yml gives workers
    # the variable holds Celery node names, as browserd_worker_up{worker} does: workers' own series
    # (known by scrape address) are named through browserd_worker_info, never filtered by instance
    assert worker["definition"].startswith("label_values(browserd_worker_info{") and worker["definition"].endswith(
        ", worker)")
    by_title = {p["title"]: p for p in dashboard["panels"]}
    assert all('worker=~"$worker"' in t["expr"] for t in by_title["Live workers"]["targets"])
    for title in ("Worker CPU (cores)", "Worker memory (RSS)", "Chrome memory per worker (PSS)",
                  "Pool health: browsers by state, leases in use", "Browser crashes and recycles"):
        assert all('group_left (worker) browserd_worker_info{worker=~"$worker"}' in t["expr"]
                   for t in by_title[title]["targets"]), title
    assert not any("$worker" in t["expr"] and "instance" in t["expr"].replace("on (job, instance)", "")
                   for p in dashboard["panels"] for t in p.get("targets", []))
    (alerts,) = dashboard["annotations"]["list"]
    assert alerts["enable"] and "ALERTS{" in alerts["expr"] and 'alertstate="firing"' in alerts["expr"]


def test_prometheus_scrapes_redis_through_the_exporter(compose: dict[str, Any]) -> None:
    config = load_yaml(DOCKER / "prometheus/prometheus.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["redis"]["static_configs"][0]["targets"] == ["redis-exporter:9121"]
    assert compose["services"]["redis-exporter"]["environment"]["REDIS_ADDR"] == "redis://redis:6379"


def test_image_is_set_up_with_the_readmes_commands() -> None:
    dockerfile = (DOCKER / "Dockerfile").read_text()
    instructions = [line.split(None, 1) for line in re.sub(r"\\\n", " ", dockerfile).splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
    assert instructions[0] == ["FROM", "debian:bookworm-slim"]
    quickstart = re.search(r"```sh\n(.*?)```", (REPO / "README.md").read_text(), re.S).group(1)
    setup = {cmd.strip() for line in quickstart.splitlines() for cmd in line.split("#")[0].split("&&")
             if cmd.strip().startswith("bash ")}
    assert setup == {"bash .ci/setup"}
    runs = [args for op, args in instructions if op == "RUN"]
    assert any(args.startswith("bash .ci/setup") for args in runs)
    users = [args.strip() for op, args in instructions if op == "USER"]
    assert users and users[-1] not in {"root", "0"}
    ops = [op for op, _ in instructions]
    assert ops.index("USER") > max(i for i, (op, a) in enumerate(instructions) if op == "RUN" and ".ci/setup" in a)
    assert "HEALTHCHECK" in ops and "browserd" in dict(instructions)["CMD"]
    ignored = (DOCKER / "Dockerfile.dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored


def dockerfile_instructions() -> list[list[str]]:
    text = (DOCKER / "Dockerfile").read_text()
    return [line.split(None, 1) for line in re.sub(r"\\\n", " ", text).splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_dockerfile_builds_with_buildkit_and_the_classic_builder() -> None:
    """Nothing only BuildKit understands, and no reliance on docker/Dockerfile.dockerignore (BuildKit only)."""
    text = (DOCKER / "Dockerfile").read_text()
    assert not re.search(r"^#\s*syntax=", text, re.M | re.I)  # no frontend to fetch
    instructions = dockerfile_instructions()
    for op, args in instructions:
        assert not re.search(r"--(chmod|mount|link|parents|exclude)\b", args), (op, args)
        assert "<<" not in args, "heredocs need BuildKit"
    copies = [args.split() for op, args in instructions if op == "COPY"]
    sources = [src for args in copies if not args[0].startswith("--from") for src in args[:-1]]
    # never the whole context: the classic builder sends .git and .venv along
    assert all(src not in {".", "./"} and not src.startswith((".venv", ".git/")) for src in sources), sources
    assert all((REPO / src).exists() for src in sources), sources
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]} - {"bench"}
    assert packages <= set(sources), packages - set(sources)


def test_image_is_the_runtime_only() -> None:
    runs = [args for op, args in dockerfile_instructions() if op == "RUN"]
    (setup,) = [args for args in runs if ".ci/setup" in args]
    assert setup.startswith("bash .ci/setup --runtime")


def run_setup(tmp_path: Path, *args: str) -> tuple[list[str], list[str]]:
    """.ci/setup in a scratch copy with apt-get, sudo and the venv's python stubbed: (apt-get calls, pip calls).

    PATH holds only the basics, so every OS package the mode wants is reported missing.
    """
    repo, bin_dir, log = tmp_path / "repo", tmp_path / "bin", tmp_path / "calls"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(REPO / ".ci/setup", repo / ".ci/setup")
    (repo / ".venv/bin").mkdir(parents=True)
    bin_dir.mkdir()
    stubs = {
        repo / ".venv/bin/python": f'echo "pip $*" >> {log}; [ "$3" != show ]',  # `pip show`: not installed
        repo / ".venv/bin/browserd": "true",
        bin_dir / "apt-get": f'echo "apt-get $*" >> {log}',
        bin_dir / "sudo": 'exec "$@"',
    }
    for path, body in stubs.items():
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    for tool_name in ("bash", "python3", "id", "mktemp", "cat", "rm", "dirname"):
        (bin_dir / tool_name).symlink_to(shutil.which(tool_name, path="/usr/bin:/bin") or tool_name)  # not the venv's
    env = {"PATH": str(bin_dir), "BROWSERD_CHROME_PATH": "/usr/bin/chromium", "HOME": str(tmp_path)}
    done = subprocess.run([str(bin_dir / "bash"), ".ci/setup", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    return [c for c in calls if c.startswith("apt-get install")], [c for c in calls if c.startswith("pip -m pip install")]


def test_runtime_setup_installs_no_dev_tools(tmp_path: Path) -> None:
    apt, pip = run_setup(tmp_path / "runtime", "--runtime")
    assert apt == []  # no redis-server, no Prometheus tools
    assert len(pip) == 1 and pip[0].endswith(" .[s3]")  # browserd itself with S3 for artifacts: no [dev] extras, no miniwob

    apt, pip = run_setup(tmp_path / "dev")
    assert {"redis-server", "prometheus", "prometheus-alertmanager", "prometheus-redis-exporter"} <= set(apt[0].split())
    assert any(c.endswith("-e .[dev]") for c in pip) and any("miniwob" in c for c in pip)


POOL_READY = 'browserd_pool_browsers{state="draining"} 1.0\nbrowserd_pool_browsers{state="ready"} %s\n'


class _Status(BaseHTTPRequestHandler):
    ready = "1.0"  # what the fake worker's pool reports

    def do_GET(self) -> None:  # noqa: N802
        body = (POOL_READY % self.ready).encode() if self.path == "/metrics" else b'{"status":"ok"}'
        self.send_response(200 if self.path in ("/healthz", "/metrics") else 500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def status_server() -> Iterator[int]:
    _Status.ready = "1.0"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def healthcheck(role: str, variable: str, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", variable: str(port)}
    return subprocess.run([sys.executable, str(DOCKER / "healthcheck.py"), *args], env=env, capture_output=True,
                          text=True, timeout=30)


@pytest.mark.parametrize("role, variable", [("api", "BROWSERD_API_PORT"), ("worker", "BROWSERD_METRICS_PORT")])
def test_healthcheck(status_server: int, role: str, variable: str) -> None:
    def check(port: int, *args: str) -> int:
        return healthcheck(role, variable, port, *args).returncode

    assert check(status_server, role) == 0
    assert check(free_port(), role) == 1  # nothing listening
    assert check(status_server, f"http://127.0.0.1:{status_server}/broken") == 1


def test_worker_healthcheck_wants_a_ready_browser(status_server: int) -> None:
    """A worker process that answers but has no ready browser (Chrome will not start) is unhealthy."""
    _Status.ready = "0.0"
    done = healthcheck("worker", "BROWSERD_METRICS_PORT", status_server, "worker")
    assert done.returncode == 1 and "no ready browser" in done.stderr
    _Status.ready = "2.0"
    assert healthcheck("worker", "BROWSERD_METRICS_PORT", status_server, "worker").returncode == 0


def test_promql_parses_with_promtool(dashboard: dict[str, Any], tmp_path: Path) -> None:
    """Prometheus's own parser on the alert rules and on every dashboard query (as recording rules)."""
    grafana_vars = {"$__rate_interval": "5m", "$__range": "1h", "$price_input": "0.15", "$price_output": "0.6"}
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for var, value in grafana_vars.items():
        exprs = [e.replace(var, value) for e in exprs]
    recorded = {"groups": [{"name": "dashboard", "rules": [{"record": f"dashboard:q{i}", "expr": e}
                                                           for i, e in enumerate(exprs)]}]}
    (tmp_path / "dashboard.yml").write_text(yaml.safe_dump(recorded))
    for rules in (DOCKER / "prometheus/alerts.yml", tmp_path / "dashboard.yml"):
        done = subprocess.run([tool("promtool"), "check", "rules", str(rules)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
