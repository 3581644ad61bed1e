"""``browserd credentials`` as a user types it: a set made from a file with its domains, listed and
shown without values, a tenant's own (another's name: not found), the admin's ``--tenant``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from tests.cli.test_cli import browserd
from tests.queue.stack import Stack, stack

pytestmark = pytest.mark.e2e  # the real command, python -m daemon, against a real API


@pytest.fixture(scope="module")
def keyed() -> Iterator[Stack]:
    with stack(secrets_key=Fernet.generate_key().decode()) as s:  # no worker: nothing runs
        yield s


def test_credential_sets_from_the_command_line(keyed: Stack, tmp_path: Path) -> None:
    secrets = tmp_path / "shop.json"
    secrets.write_text(json.dumps({"user": "ada@example.org", "password": "cli-secret-value-1"}))
    made = browserd(keyed, "credentials", "set", "shop", str(secrets), "--domain", "Shop.Example", "--domain",
                    "login.shop.example")
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "shop  secrets password, user  domains login.shop.example, shop.example"
    key = browserd(keyed, "tenant", "create", "cli-acme").stdout.splitlines()[1]
    as_tenant = ("--token", key)
    missing = browserd(keyed, *as_tenant, "credentials", "set", "shop", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "cannot read secrets" in missing.stderr
    secrets.write_text(json.dumps({"password": "tenant-secret-2"}))
    assert browserd(keyed, *as_tenant, "credentials", "set", "shop", str(secrets)).returncode == 0
    assert browserd(keyed, *as_tenant, "credentials", "show", "shop").stdout.strip() == (
        "shop  secrets password  domains any  tenant cli-acme")
    listed = browserd(keyed, "credentials", "list")
    assert "cli-secret-value-1" not in listed.stdout and "tenant-secret-2" not in listed.stdout
    assert listed.stdout.splitlines() == ["shop  secrets password, user  domains login.shop.example, shop.example",
                                          "shop  secrets password  domains any  tenant cli-acme"]
    assert browserd(keyed, "credentials", "show", "shop", "--tenant", "cli-acme").stdout.startswith("shop  secrets password  domains any")
    assert browserd(keyed, *as_tenant, "credentials", "delete", "shop", "--tenant", "operator").returncode == 0  # its own
    assert browserd(keyed, *as_tenant, "credentials", "show", "shop").returncode == 1  # gone: its own was deleted
    assert browserd(keyed, "credentials", "show", "shop").returncode == 0  # the operator's stays
    bad = tmp_path / "bad.json"
    bad.write_text('["not", "an", "object"]')
    assert browserd(keyed, "credentials", "set", "x", str(bad)).returncode == 2
    assert browserd(keyed, "credentials", "set", "x", str(secrets), "--domain", "https://x/").returncode == 1


def test_the_admin_lists_one_tenants_profiles_and_recipes(keyed: Stack, tmp_path: Path) -> None:
    key = browserd(keyed, "tenant", "create", "cli-beta").stdout.splitlines()[1]
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"cookies": [], "origins": []}))
    assert browserd(keyed, "--token", key, "profile", "import", "login", str(state)).returncode == 0
    assert browserd(keyed, "profile", "import", "op-login", str(state)).returncode == 0
    everyone = browserd(keyed, "profile", "list").stdout
    assert "op-login  version 1" in everyone and "tenant cli-beta" in everyone
    beta = browserd(keyed, "profile", "list", "--tenant", "cli-beta").stdout.splitlines()
    assert len(beta) == 1 and beta[0].startswith("login  version 1") and beta[0].endswith("tenant cli-beta")
    assert browserd(keyed, "--token", key, "profile", "list").stdout.splitlines() == beta  # its own, as the filter's
    assert browserd(keyed, "recipe", "list", "--tenant", "cli-beta").stdout == ""
