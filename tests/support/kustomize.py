"""Render a kustomization directory to its list of resources, without the kubectl binary.

CI has no kubectl and no network, so the manifests' test renders ``docker/k8s`` here. Only the part
of kustomize those files use is implemented, and anything else fails loudly (``Unsupported``) rather
than being rendered differently from ``kubectl apply -k``:

* ``resources``: files (several YAML documents each) and directories holding a kustomization;
* ``components``: directories holding a ``kind: Component``, applied in order to what the
  resources gave (their own resources added, their patches applied);
* ``namespace``: set on every namespaced resource of that kustomization (and below it);
* ``images``: ``name`` -> ``newName``/``newTag`` on containers' images;
* ``patches`` with a ``target`` (kind, name) and JSON 6902 operations (add, remove, replace), inline
  or in a file; and the strategic-merge ``$patch: delete`` of a whole resource.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

KUSTOMIZATION = "kustomization.yaml"
FIELDS = {"apiVersion", "kind", "namespace", "resources", "components", "patches", "images"}
KINDS = {"Kustomization": "kustomize.config.k8s.io/v1beta1", "Component": "kustomize.config.k8s.io/v1alpha1"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "PersistentVolume", "StorageClass", "PriorityClass"}

Resource = dict[str, Any]


class Unsupported(Exception):
    """The kustomization uses something this renderer does not implement."""


def render(directory: Path) -> list[Resource]:
    """The resources ``kubectl kustomize directory`` would print, in the order they are listed."""
    return _build(directory, "Kustomization", [])


def _build(directory: Path, kind: str, resources: list[Resource]) -> list[Resource]:
    """A kustomization's (or, on what its parent accumulated, a component's) resources, then its
    components, patches, images and namespace, in kustomize's order."""
    spec = yaml.safe_load((directory / KUSTOMIZATION).read_text())
    unknown = set(spec) - FIELDS
    if unknown:
        raise Unsupported(f"{directory / KUSTOMIZATION}: {sorted(unknown)}")
    if (spec.get("kind", "Kustomization"), spec.get("apiVersion", KINDS["Kustomization"])) != (kind, KINDS[kind]):
        raise Unsupported(f"{directory}: {spec.get('apiVersion')} {spec.get('kind')} where a {kind} belongs")
    resources = list(resources)
    for entry in spec.get("resources", []):
        path = directory / entry
        if path.is_dir():
            resources += render(path)
        else:
            resources += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    for entry in spec.get("components", []):
        resources = _build(directory / entry, "Component", resources)
    for patch in spec.get("patches", []):
        resources = _patch(directory, resources, patch)
    for image in spec.get("images", []):
        _set_image(resources, image)
    if "namespace" in spec:
        for resource in resources:
            if resource["kind"] not in CLUSTER_SCOPED:
                resource["metadata"]["namespace"] = spec["namespace"]
    return resources


def find(resources: list[Resource], kind: str, name: str) -> Resource:
    (found,) = [r for r in resources if r["kind"] == kind and r["metadata"]["name"] == name]
    return found


def _patch(directory: Path, resources: list[Resource], patch: dict[str, Any]) -> list[Resource]:
    if set(patch) - {"path", "patch", "target"}:
        raise Unsupported(f"patch fields {sorted(patch)}")
    body = yaml.safe_load((directory / patch["path"]).read_text() if "path" in patch else patch["patch"])
    if isinstance(body, dict):
        if body.get("$patch") != "delete" or set(body) - {"$patch", "apiVersion", "kind", "metadata"}:
            raise Unsupported("strategic-merge patches other than `$patch: delete` of a whole resource")
        doomed = find(resources, body["kind"], body["metadata"]["name"])
        return [r for r in resources if r is not doomed]
    target = patch.get("target") or {}
    if set(target) - {"kind", "name"} or not target:
        raise Unsupported(f"patch target {target}")
    resource = find(resources, target["kind"], target["name"])
    for op in body:
        _json6902(resource, op)
    return resources


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise Unsupported(f"JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _json6902(document: Resource, op: dict[str, Any]) -> None:
    """One RFC 6902 operation in place; a path that does not exist raises (as kustomize does)."""
    *parents, last = _pointer(op["path"])
    node: Any = document
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    kind = op["op"]
    if kind == "add":
        value = copy.deepcopy(op["value"])
        if isinstance(node, list):
            node.insert(len(node) if last == "-" else int(last), value)
        else:
            node[last] = value
    elif kind == "remove":
        del node[int(last) if isinstance(node, list) else last]
    elif kind == "replace":
        key = int(last) if isinstance(node, list) else last
        node[key]  # noqa: B018  (replace needs an existing value: KeyError/IndexError otherwise)
        node[key] = copy.deepcopy(op["value"])
    else:
        raise Unsupported(f"JSON 6902 op {kind!r}")


def _set_image(resources: list[Resource], image: dict[str, str]) -> None:
    if set(image) - {"name", "newName", "newTag"}:
        raise Unsupported(f"images entry {image}")
    for resource in resources:
        pod = resource.get("spec", {}).get("template", {}).get("spec", {})
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            name, _, tag = container["image"].partition(":")
            if name == image["name"]:
                container["image"] = f"{image.get('newName', name)}:{image.get('newTag', tag or 'latest')}"
