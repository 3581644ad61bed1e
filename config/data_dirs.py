"""Where browserd keeps its files on a host when the settings do not say: the artifact store's folder.

``/var/lib/browserd/artifacts`` is the system's place (the container image makes it, owned by its
user). A user who is not root can rarely write below ``/var/lib``: browserd then keeps its files in
that user's data directory (``$XDG_DATA_HOME/browserd/artifacts``, by default
``~/.local/share/browserd/artifacts``) rather than a folder every write fails in.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SYSTEM_ARTIFACTS = "/var/lib/browserd/artifacts"


def writable_here(folder: Path) -> bool:
    """Whether this process can write ``folder``, or create it: the nearest existing folder on its way
    must be a directory this process may write into."""
    for path in (folder, *folder.parents):
        if path.exists():
            return path.is_dir() and os.access(path, os.W_OK | os.X_OK)
    return False


def user_data_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME`` (an absolute path), else ``~/.local/share`` (the XDG base directory default)."""
    xdg = environ.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    home = environ.get("HOME") or os.path.expanduser("~")
    return Path(home) / ".local" / "share"


def default_artifacts_url(system: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """``file://`` + ``system`` (default ``SYSTEM_ARTIFACTS``) when this process may write there, else
    the user's data directory's ``browserd/artifacts``."""
    system = system or SYSTEM_ARTIFACTS
    if writable_here(Path(system)):
        return "file://" + system
    return "file://" + str(user_data_dir(os.environ if environ is None else environ) / "browserd" / "artifacts")
