"""The artifact store's default folder: the system's when this process may write it, else the user's
data directory (issue 29: a user who is not root got /var/lib/browserd/artifacts, and every job's
artifacts went missing quietly)."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import Settings, data_dirs
from config.data_dirs import default_artifacts_url


def test_the_system_folder_when_it_can_be_written(tmp_path: Path) -> None:
    system = tmp_path / "var" / "lib" / "browserd" / "artifacts"  # not there yet: made on first write
    assert default_artifacts_url(str(system), {"HOME": str(tmp_path / "home")}) == f"file://{system}"


def test_the_users_data_directory_when_the_system_folder_cannot_be_written(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")  # nothing can be made below a file, whoever asks
    system = str(blocked / "browserd" / "artifacts")
    home = tmp_path / "home"
    assert default_artifacts_url(system, {"HOME": str(home)}) == f"file://{home}/.local/share/browserd/artifacts"
    assert default_artifacts_url(system, {"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "data")}) \
        == f"file://{tmp_path}/data/browserd/artifacts"
    # a relative XDG_DATA_HOME is to be ignored (XDG base directory specification)
    assert default_artifacts_url(system, {"HOME": str(home), "XDG_DATA_HOME": "data"}) \
        == f"file://{home}/.local/share/browserd/artifacts"


def test_settings_without_the_variable_pick_a_store_this_user_can_write(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """BROWSERD_ARTIFACTS_URL unset, on a host whose system folder this user cannot write (here: one
    below a file, which no user can write, root included): the user's data directory, not a
    folder every write fails in."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setattr(data_dirs, "SYSTEM_ARTIFACTS", str(blocked / "artifacts"))
    monkeypatch.delenv("BROWSERD_ARTIFACTS_URL", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Settings(_env_file=None).artifacts_url == f"file://{tmp_path}/home/.local/share/browserd/artifacts"
    monkeypatch.setattr(data_dirs, "SYSTEM_ARTIFACTS", str(tmp_path / "var" / "artifacts"))  # one it can write
    assert Settings(_env_file=None).artifacts_url == f"file://{tmp_path}/var/artifacts"
    assert Settings(_env_file=None, artifacts_url="s3://bucket/prefix/").artifacts_url == "s3://bucket/prefix"
