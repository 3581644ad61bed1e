"""The Kubernetes manifests (docker/k8s): every overlay renders, every resource passes Kubernetes'
own schemas (kubernetes-validate, strict: unknown fields fail) for the oldest and newest version we
support, the CRDs (KEDA's ScaledObject, the Prometheus Operator's ServiceMonitor) pass the small
schemas in ``crd_schemas/``, and the manifests agree with the code: the settings they set exist and
load, the commands are browserd's, the probe paths are the API's routes, the ports are the ports the
processes listen on, the grace period covers a job's hard limit, and the KEDA query reads series
browserd exports. No cluster, no kubectl, no network: kubernetes-validate ships its schemas.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from referencing import Registry
from referencing import Resource as SchemaResource

from config import Settings, env_name, load_settings
from daemon.api.exposure import ExposedWithoutToken, check_exposure
from daemon.cli.main import build_parser
from tests.ops.test_alerts import tool
from tests.support.kustomize import Resource, find, render
from workers.jobs import metrics
from workers.jobs.queue.limits import check_limits, hard_limit
from workers.jobs.queue.names import QUEUES, SESSIONS_QUEUE

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "docker" / "k8s"
OVERLAYS = ["base", *(f"overlays/{name}" for name in ("servicemonitor", "keda", "s3", "external-redis", "production",
                                                      "redis-sentinel"))]
SENTINEL = "overlays/redis-sentinel"
SENTINEL_PODS = 3
EXAMPLE_SECRETS = [K8S / "secret.example.yaml", K8S / "components/s3/s3-credentials.example.yaml",
                   K8S / "components/external-redis/redis-url.example.yaml"]
REQUIRED_SECRETS = {"BROWSERD_API_TOKEN", "BROWSERD_REDIS_URL"}  # a pod without them must not start
CRD_SCHEMAS = {("keda.sh/v1alpha1", "ScaledObject"): "scaledobject-keda-v1alpha1.json",
               ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor-monitoring-v1.json"}
# The oldest Kubernetes the manifests are for (PodDisruptionBudget's unhealthyPodEvictionPolicy is
# on by default from 1.27) and the newest kubernetes-validate knows.
K8S_VERSIONS = ["1.27", kubernetes_validate.latest_version()]
COMMANDS = {"api": "serve", "worker": "worker", "beat": "beat"}  # component -> browserd subcommand
# Variables the manifests may set that are not browserd settings: the S3 client's credentials.
FOREIGN_VARIABLES = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL"}
# What a worker takes after its warm shutdown's jobs: WorkerRuntime.stop (its pool and Redis: 30 s,
# its loop thread: 10 s), then `browserd worker` waits 15 s for its side consumer.
WORKER_STOP_SECONDS = 30 + 10 + 15
# Memory of a worker pod (MiB), measured here on an idle `browserd worker` (concurrency 4, one
# browser, two warm contexts): the worker 168 RSS, its side consumer 137 RSS, Chrome 214 PSS.
IDLE_PYTHON_MIB = 168 + 137
IDLE_CHROME_MIB = 214
JOB_MIB = 130  # each running job with its warm spare context (BROWSERD_POOL_MAX_MEMORY_MB's description)
QUANTITY = re.compile(r"^(\d+)(Mi|Gi)$")


def canonical(found: list[Resource]) -> list[str]:
    return sorted(json.dumps(resource, sort_keys=True) for resource in found)


@cache
def rendered(overlay: str) -> tuple[Resource, ...]:
    """The overlay as tests/support/kustomize.py renders it, and, where kubectl is installed, exactly
    what `kubectl kustomize` prints (as the compose tests use docker-compose when it is there)."""
    ours = render(K8S / overlay)
    if shutil.which("kubectl"):
        done = subprocess.run(["kubectl", "kustomize", str(K8S / overlay)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert canonical([r for r in yaml.safe_load_all(done.stdout) if r]) == canonical(ours), overlay
    return tuple(ours)


def resources(overlay: str) -> list[Resource]:
    return list(rendered(overlay))


def examples() -> list[Resource]:
    return [yaml.safe_load(path.read_text()) for path in EXAMPLE_SECRETS]


def pod(resource: Resource) -> dict[str, Any]:
    return resource["spec"]["template"]["spec"]


def container(overlay: str, component: str) -> dict[str, Any]:
    (only,) = pod(find(resources(overlay), "Deployment", f"browserd-{component}"))["containers"]
    return only


def mib(quantity: str) -> int:
    number, unit = QUANTITY.match(quantity).groups()  # type: ignore[union-attr]
    return int(number) * (1024 if unit == "Gi" else 1)


# --- schemas ---------------------------------------------------------------------------------


@cache
def crd_registry() -> Registry:
    """Kubernetes' shared definitions (ObjectMeta, the HPA behavior) from kubernetes-validate, by the
    $id its own schemas use, so the CRD schemas refer to them instead of restating them."""
    directory = f"kubernetes-json-schema/v{K8S_VERSIONS[-1]}-local-strict"
    definitions = kubernetes_validate.utils.schema_contents(f"{directory}/_definitions.json", K8S_VERSIONS[-1])
    return SchemaResource.from_contents(definitions) @ Registry()


def validate_crd(resource: Resource) -> None:
    name = CRD_SCHEMAS[(resource["apiVersion"], resource["kind"])]
    schema = json.loads((Path(__file__).parent / "crd_schemas" / name).read_text())
    jsonschema.Draft202012Validator(schema, registry=crd_registry()).validate(resource)


def validate(resource: Resource) -> None:
    if (resource["apiVersion"], resource["kind"]) in CRD_SCHEMAS:
        validate_crd(resource)
        return
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(resource, version, strict=True)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_resource_passes_its_schema(overlay: str) -> None:
    for resource in resources(overlay):
        validate(resource)


def test_example_secrets_pass_their_schema() -> None:
    for secret in examples():
        validate(secret)


def test_validation_is_strict() -> None:
    """A misspelt field fails, in Kubernetes' kinds and in the CRDs alike (not only a wrong type)."""
    deployment = json.loads(json.dumps(find(resources("base"), "Deployment", "browserd-worker")))
    pod(deployment)["containers"][0]["readinessProbe"]["execc"] = {"command": ["true"]}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(deployment)
    scaled = json.loads(json.dumps(find(resources("overlays/keda"), "ScaledObject", "browserd-worker")))
    scaled["spec"]["triggers"][0]["metadata"]["treshold"] = scaled["spec"]["triggers"][0]["metadata"].pop("threshold")
    with pytest.raises(jsonschema.ValidationError):
        validate(scaled)
    monitor = json.loads(json.dumps(find(resources("overlays/servicemonitor"), "ServiceMonitor", "browserd-api")))
    monitor["spec"]["endpoints"][0]["intervall"] = "15s"
    with pytest.raises(jsonschema.ValidationError):
        validate(monitor)


def names(overlay: str) -> set[tuple[str, str]]:
    return {(r["kind"], r["metadata"]["name"]) for r in resources(overlay)}


def test_overlays_are_the_base_plus_their_part() -> None:
    base = names("base")
    monitors = {("ServiceMonitor", "browserd-api"), ("ServiceMonitor", "browserd-worker")}
    scaler = {("ScaledObject", "browserd-worker")}
    volume = {("PersistentVolumeClaim", "browserd-artifacts")}
    redis = {("StatefulSet", "browserd-redis"), ("Service", "browserd-redis"), ("NetworkPolicy", "browserd-redis")}
    assert names("overlays/servicemonitor") == base | monitors
    assert names("overlays/keda") == base | scaler
    assert names("overlays/s3") == base - volume
    assert names("overlays/external-redis") == base - redis
    assert names("overlays/production") == (base | monitors | scaler) - volume - redis
    assert names(SENTINEL) == base | {("ConfigMap", "browserd-redis-sentinel-init")}
    for overlay in OVERLAYS:
        assert all(r["metadata"].get("namespace") == "browserd" for r in resources(overlay) if r["kind"] != "Namespace")


# --- the manifests agree with the code -------------------------------------------------------


def env_of(overlay: str, component: str, filled: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a component's container gets: the ConfigMaps and Secrets it loads, then its
    own env. Secrets hold the example Secrets' values, or ``filled``'s for the keys it names."""
    found = {r["metadata"]["name"]: r for r in resources(overlay)}
    secrets = {s["metadata"]["name"]: {k: (filled or {}).get(k, v) for k, v in s["stringData"].items()}
               for s in examples()}
    env: dict[str, str] = {}
    spec = container(overlay, component)
    for source in spec.get("envFrom", []):
        if "configMapRef" in source:
            env |= found[source["configMapRef"]["name"]]["data"]
        else:
            env |= secrets[source["secretRef"]["name"]]
    for variable in spec.get("env", []):
        if "value" in variable:
            env[variable["name"]] = variable["value"]
        else:
            ref = variable["valueFrom"]["secretKeyRef"]
            env[variable["name"]] = secrets[ref["name"]][ref["key"]]
    return env


def settings_of(overlay: str, component: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                **filled: str) -> Settings:
    """The component's settings as browserd loads them from that environment (and nothing else)."""
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in [n for n in os.environ if n.startswith("BROWSERD_") or n == "OPENAI_API_KEY"]:
        monkeypatch.delenv(name)
    for name, value in env_of(overlay, component, filled).items():
        monkeypatch.setenv(name, value)
    return load_settings()


FILLED = {"BROWSERD_API_TOKEN": "k8s-test-token", "BROWSERD_SECRETS_KEY": "A" * 43 + "=", "OPENAI_API_KEY": "sk-test"}


def test_every_variable_set_is_a_setting() -> None:
    known = {env_name(field) for field in Settings.model_fields}
    for overlay in OVERLAYS:
        for component in COMMANDS:
            variables = set(env_of(overlay, component))
            assert variables - known <= FOREIGN_VARIABLES, (overlay, component, sorted(variables - known - FOREIGN_VARIABLES))
    for secret in examples():
        assert set(secret["stringData"]) - known <= FOREIGN_VARIABLES


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_settings_load_and_agree(overlay: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each process would start with these values: they validate, the job timeout fits the visibility
    timeout, and the API on 0.0.0.0 has its token."""
    if overlay == SENTINEL and not reads_sentinel_urls():
        pytest.skip("this browserd does not read BROWSERD_REDIS_URL's Sentinel form yet (issue 26's Redis part)")
    for component in COMMANDS:
        settings = settings_of(overlay, component, monkeypatch, tmp_path, **FILLED)
        check_limits(settings)
        external = overlay.endswith(("external-redis", "production"))
        assert settings.redis_url == ("rediss://:CHANGE-ME@redis.example.internal:6379/0" if external
                                      else sentinel_url() if overlay == SENTINEL else "redis://browserd-redis:6379/0")
    api = settings_of(overlay, "api", monkeypatch, tmp_path, **FILLED)
    check_exposure(api.api_host, api)
    assert api.secrets_key is not None
    # the Secret as the template leaves it (token empty) cannot start an open API
    unfilled = settings_of(overlay, "api", monkeypatch, tmp_path)
    with pytest.raises(ExposedWithoutToken):
        check_exposure(unfilled.api_host, unfilled)


def test_secret_references() -> None:
    """Every Secret key a pod reads is in an example Secret; only the API token and an external
    Redis's URL are required (a pod without them does not start)."""
    secrets = {s["metadata"]["name"]: s["stringData"] for s in examples()}
    for overlay in OVERLAYS:
        for component in COMMANDS:
            spec = container(overlay, component)
            for variable in spec.get("env", []):
                ref = variable["valueFrom"]["secretKeyRef"]
                assert ref["key"] in secrets[ref["name"]] and ref["key"] == variable["name"]
                assert ref.get("optional", False) == (ref["key"] not in REQUIRED_SECRETS), variable
            for source in spec.get("envFrom", []):
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets and source["secretRef"]["optional"]
    assert "BROWSERD_API_TOKEN" in {v["name"] for v in container("base", "api")["env"]}
    assert "OPENAI_API_KEY" not in {v["name"] for v in container("base", "api")["env"]}  # the API never runs the agent


def test_commands_are_browserd_subcommands() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    parser = build_parser()
    for component, sub in COMMANDS.items():
        command = container("base", component)["command"]
        assert command[0] in scripts and command[1:] == [sub]
        args = parser.parse_args(command[1:])
        assert args.handler.__module__ == f"daemon.cli.commands.{sub}"


def test_api_probes_ask_the_apis_routes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from daemon.api import create_app

    settings = settings_of("base", "api", monkeypatch, tmp_path, **FILLED)
    app = create_app(settings)
    # the documented routes, and those kept out of the OpenAPI schema (/metrics)
    paths = set(app.openapi()["paths"]) | {getattr(route, "path", None) for route in app.routes}
    spec = container("base", "api")
    probes = {kind: spec[kind]["httpGet"] for kind in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes["readinessProbe"]["path"] == "/readyz"  # Redis and a live worker
    assert {probes["startupProbe"]["path"], probes["livenessProbe"]["path"]} == {"/healthz"}  # the process
    ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
    for probe in probes.values():
        assert probe["path"] in paths
        assert ports[probe["port"]] == settings.api_port
    annotations = find(resources("base"), "Deployment", "browserd-api")["spec"]["template"]["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == settings.api_port and annotations["prometheus.io/path"] in paths


def test_worker_probes_and_metrics_port(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Readiness is the image's pool check (docker/healthcheck.py, `worker`) on the port the worker
    serves metrics on, which is the port Prometheus is told to scrape."""
    settings = settings_of("base", "worker", monkeypatch, tmp_path, **FILLED)
    spec = container("base", "worker")
    ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
    assert ports["metrics"] == settings.metrics_port
    assert settings.metrics_host == "0.0.0.0"  # on the pod's address, where the kubelet and Prometheus ask
    worker = find(resources("base"), "Deployment", "browserd-worker")
    annotations = worker["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and int(annotations["prometheus.io/port"]) == settings.metrics_port
    service = find(resources("base"), "Service", "browserd-worker")
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["metrics"]

    command = spec["readinessProbe"]["exec"]["command"]
    dockerfile = (REPO / "docker" / "Dockerfile").read_text()
    assert f"COPY docker/healthcheck.py /usr/local/bin/{command[0]}" in dockerfile
    healthcheck = runpy.run_path(str(REPO / "docker" / "healthcheck.py"))
    monkeypatch.setenv("BROWSERD_METRICS_PORT", env_of("base", "worker")["BROWSERD_METRICS_PORT"])
    assert command[1:] == ["worker"]
    assert healthcheck["TARGETS"]["worker"]() == f"http://127.0.0.1:{settings.metrics_port}/metrics"
    assert spec["livenessProbe"]["httpGet"] == {"path": "/metrics", "port": "metrics"}


def test_grace_period_lets_a_running_job_finish(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = settings_of("base", "worker", monkeypatch, tmp_path, **FILLED)
    grace = pod(find(resources("base"), "Deployment", "browserd-worker"))["terminationGracePeriodSeconds"]
    assert grace >= hard_limit(settings.job_timeout) + WORKER_STOP_SECONDS
    assert grace < settings.visibility_timeout  # the pod is gone long before the broker would redeliver


def test_worker_memory_follows_the_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = settings_of("base", "worker", monkeypatch, tmp_path, **FILLED)
    resources_ = container("base", "worker")["resources"]
    request, limit = mib(resources_["requests"]["memory"]), mib(resources_["limits"]["memory"])
    concurrency = settings.worker_concurrency
    assert settings.pool_max_memory_mb >= JOB_MIB * concurrency  # the setting's own guidance
    assert request >= IDLE_PYTHON_MIB + IDLE_CHROME_MIB + JOB_MIB * concurrency  # busy, not only idle
    # Chrome is recycled (at pool_max_memory_mb per browser) before the kernel kills the pod, even
    # while a replacement browser starts beside it.
    assert limit >= settings.pool_max_memory_mb * settings.pool_browser_count() + IDLE_PYTHON_MIB + IDLE_CHROME_MIB


def test_deployments_select_their_pods_and_run_safely() -> None:
    everything = resources("base")
    uid = re.search(r"useradd .*--uid (\d+)", (REPO / "docker" / "Dockerfile").read_text()).group(1)  # type: ignore[union-attr]
    workloads = [r for r in everything if r["kind"] in ("Deployment", "StatefulSet")]
    for workload in workloads:
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert workload["spec"]["selector"]["matchLabels"].items() <= labels.items()
        spec = pod(workload)
        assert spec["securityContext"]["runAsNonRoot"] and spec["automountServiceAccountToken"] is False
        for c in spec["containers"]:
            assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}}
            if c["image"].startswith("browserd"):
                assert str(spec["securityContext"]["runAsUser"]) == uid
                assert "/tmp" in {m["mountPath"] for m in c["volumeMounts"]}  # the root filesystem is read-only
        volumes = {v["name"] for v in spec.get("volumes", [])}
        assert {m["name"] for c in spec["containers"] for m in c.get("volumeMounts", [])} <= volumes | {
            t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])}
        for volume in spec.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                find(everything, "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
    pods = [w["spec"]["template"]["metadata"]["labels"] for w in workloads]
    for selecting in [r for r in everything if r["kind"] in ("Service", "PodDisruptionBudget", "NetworkPolicy")]:
        selector = selecting["spec"].get("selector") or selecting["spec"]["podSelector"]
        selector = selector.get("matchLabels", selector)
        assert sum(selector.items() <= labels.items() for labels in pods) == 1, selecting["metadata"]["name"]
    # Chrome's writable home: the image user's home directory
    home = {m["mountPath"] for m in container("base", "worker")["volumeMounts"]}
    assert "/home/browserd" in home and "--create-home" in (REPO / "docker" / "Dockerfile").read_text()


def test_workers_stop_gracefully_and_beat_runs_once() -> None:
    everything = resources("base")
    worker = find(everything, "Deployment", "browserd-worker")
    assert worker["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert pod(worker)["shareProcessNamespace"] is True  # a PID 1 that reaps Chrome's orphans (compose: init)
    budget = find(everything, "PodDisruptionBudget", "browserd-worker")
    assert budget["spec"]["maxUnavailable"] == 1
    beat = find(everything, "Deployment", "browserd-beat")
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"] == {"type": "Recreate"}
    redis = find(everything, "StatefulSet", "browserd-redis")
    args = redis["spec"]["template"]["spec"]["containers"][0]["args"]
    flags = dict(zip(args[::2], args[1::2]))
    assert flags["--appendonly"] == "yes" and flags["--maxmemory-policy"] == "noeviction"


@pytest.mark.parametrize("overlay", ["overlays/keda", "overlays/production"])
def test_keda_scales_workers_on_demand_for_job_slots(overlay: str, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    settings = settings_of(overlay, "worker", monkeypatch, tmp_path, **FILLED)
    everything = resources(overlay)
    scaled = find(everything, "ScaledObject", "browserd-worker")["spec"]
    assert scaled["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "browserd-worker"}
    assert scaled["minReplicaCount"] >= 1  # the API's readiness (/readyz) needs a live worker
    assert "replicas" not in find(everything, "Deployment", "browserd-worker")["spec"]  # the HPA owns it
    (trigger,) = scaled["triggers"]
    assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue"
    assert float(trigger["metadata"]["threshold"]) == settings.worker_concurrency  # slots of one pod
    query = trigger["metadata"]["query"]
    used = set(re.findall(r"\bbrowserd_[a-z_]+\b", query))
    assert used == {"browserd_queue_depth", "browserd_jobs_in_state", "browserd_sessions_open"}
    assert used <= metrics.metric_names()
    (queues,) = re.findall(r'queue=~"([^"]+)"', query)
    assert set(queues.split("|")) == {*QUEUES, SESSIONS_QUEUE}  # every job queue, not webhooks/maintenance
    assert "sum(browserd" not in query.replace(" ", "")  # API replicas report the same numbers: max, not sum
    rules = tmp_path / "keda.yml"
    rules.write_text(yaml.safe_dump({"groups": [{"name": "keda", "rules": [{"record": "keda:demand", "expr": query}]}]}))
    done = subprocess.run([tool("promtool"), "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("overlay", ["overlays/servicemonitor", "overlays/production"])
def test_service_monitors_scrape_the_services_by_the_dashboards_job_names(overlay: str) -> None:
    everything = resources(overlay)
    dashboard = json.loads((REPO / "docker" / "grafana" / "dashboards" / "browserd.json").read_text())
    (worker_variable,) = [v for v in dashboard["templating"]["list"] if v["name"] == "worker"]
    for name, port in (("browserd-api", "http"), ("browserd-worker", "metrics")):
        monitor = find(everything, "ServiceMonitor", name)["spec"]
        service = find(everything, "Service", name)  # the job label is the Service's name
        assert monitor["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        assert [e["port"] for e in monitor["endpoints"]] == [p["name"] for p in service["spec"]["ports"]] == [port]
        assert monitor["endpoints"][0]["path"] == "/metrics"
        assert monitor["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
        deployment = find(everything, "Deployment", name)
        assert deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/scrape"] == "false"
    assert 'job="browserd-worker"' in worker_variable["definition"]


@pytest.mark.parametrize("overlay", ["overlays/s3", "overlays/production"])
def test_s3_overlay_has_no_volume_for_artifacts(overlay: str) -> None:
    everything = resources(overlay)
    settings = find(everything, "ConfigMap", "browserd-settings")["data"]
    assert settings["BROWSERD_ARTIFACTS_URL"].startswith("s3://")
    for component in COMMANDS:
        spec = pod(find(everything, "Deployment", f"browserd-{component}"))
        assert "/var/lib/browserd/artifacts" not in {m["mountPath"] for c in spec["containers"] for m in c["volumeMounts"]}
        assert not any("persistentVolumeClaim" in v for v in spec.get("volumes", []))
    for component in ("api", "worker"):  # the processes that read and write artifacts
        assert {"secretRef": {"name": "browserd-artifacts-s3", "optional": True}} in container(overlay, component)["envFrom"]


@pytest.mark.parametrize("overlay", ["overlays/external-redis", "overlays/production"])
def test_external_redis_comes_from_a_secret(overlay: str) -> None:
    """No evaluation Redis, and its URL (with a password) is in no ConfigMap."""
    everything = resources(overlay)
    assert "BROWSERD_REDIS_URL" not in find(everything, "ConfigMap", "browserd-settings")["data"]
    assert not [r for r in everything if "redis" in r["metadata"]["name"]]
    for component in COMMANDS:
        (ref,) = [v["valueFrom"]["secretKeyRef"] for v in container(overlay, component)["env"]
                  if v["name"] == "BROWSERD_REDIS_URL"]
        assert ref == {"name": "browserd-redis", "key": "BROWSERD_REDIS_URL"}


def sentinel_url() -> str:
    return find(resources(SENTINEL), "ConfigMap", "browserd-settings")["data"]["BROWSERD_REDIS_URL"]


def reads_sentinel_urls() -> bool:
    try:
        load_settings(redis_url=sentinel_url())
    except Exception:  # noqa: BLE001 - a settings error of whatever type this version raises
        return False
    return True


def test_redis_with_sentinel_is_three_pods_that_browserd_finds_through_every_sentinel() -> None:
    """The sentinel component: three pods of Redis + Sentinel, a quorum of two, the master's name and
    every Sentinel in BROWSERD_REDIS_URL (kombu's form), the Sentinel port open to browserd's pods, and
    the persistence and eviction settings of base's Redis kept."""
    everything = resources(SENTINEL)
    redis = find(everything, "StatefulSet", "browserd-redis")
    assert redis["spec"]["replicas"] == SENTINEL_PODS
    assert redis["spec"].get("podManagementPolicy", "OrderedReady") == "OrderedReady"  # pod 0 first: the first master
    containers = {c["name"]: c for c in pod(redis)["containers"]}
    assert containers["redis"]["args"] == ["/conf/redis.conf"] and containers["sentinel"]["command"][0] == "redis-sentinel"
    (init,) = pod(redis)["initContainers"]
    script = find(everything, "ConfigMap", "browserd-redis-sentinel-init")["data"]["sentinel-init.sh"]
    assert init["command"] == ["sh", "/init/sentinel-init.sh"]
    parsed = subprocess.run(["sh", "-n"], input=script, capture_output=True, text=True, timeout=30)
    assert parsed.returncode == 0, parsed.stderr
    assert {"appendonly yes", "maxmemory-policy noeviction"} <= set(script.splitlines())
    (monitor,) = [line.split() for line in script.splitlines() if line.startswith("sentinel monitor ")]
    master_name, quorum = monitor[2], int(monitor[5])
    assert quorum == SENTINEL_PODS // 2 + 1
    url = sentinel_url()
    hosts = re.findall(r"sentinel://([^;/]+)", url)
    assert hosts == [f"browserd-redis-{i}.browserd-redis:26379" for i in range(SENTINEL_PODS)]
    assert url.endswith(f"/0?master_name={master_name}")
    assert f"for i in {' '.join(str(i) for i in range(SENTINEL_PODS))}; do" in script  # it asks every Sentinel
    service = find(everything, "Service", "browserd-redis")["spec"]
    assert service["clusterIP"] == "None" and service["publishNotReadyAddresses"] is True
    assert {p["port"] for p in service["ports"]} == {6379, 26379}
    policy = find(everything, "NetworkPolicy", "browserd-redis")["spec"]
    assert {p["port"] for p in policy["ingress"][0]["ports"]} == {6379, 26379}
    for c in [*pod(redis)["containers"], init]:
        assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                        "capabilities": {"drop": ["ALL"]}}


def test_readme_names_what_exists() -> None:
    readme = (K8S / "README.md").read_text()
    for path in re.findall(r"(docker/k8s/(?:base|overlays/[a-z0-9-]+))", readme):
        assert (REPO / path / "kustomization.yaml").is_file(), path
    for overlay in OVERLAYS:
        assert f"docker/k8s/{overlay}" in readme, overlay
    for link in re.findall(r"\]\(((?!https?:)[^)#]+)\)", readme):  # relative links
        assert (K8S / link).exists(), link


def test_readme_examples_pass_their_schemas() -> None:
    """The HPA and Ingress the README offers are valid as written."""
    examples = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", (K8S / "README.md").read_text(), re.S)]
    assert {e["kind"] for e in examples} == {"HorizontalPodAutoscaler", "Ingress"}
    for example in examples:
        validate(example)
    (hpa,) = [e for e in examples if e["kind"] == "HorizontalPodAutoscaler"]
    scaled = find(resources("overlays/keda"), "ScaledObject", "browserd-worker")["spec"]
    assert hpa["spec"]["scaleTargetRef"] == scaled["scaleTargetRef"]
    assert hpa["spec"]["metrics"][0]["external"]["target"]["averageValue"] == scaled["triggers"][0]["metadata"]["threshold"]
