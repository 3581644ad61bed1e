"""A job's input files on the worker's disk: the only files the browser may be handed.

``Uploads.write`` puts the job's files (``JobInputs.files``, loaded by the pipeline's input-files
feature) into a folder of their own, readable by the user Chrome runs as and by no one else;
``upload_file`` asks ``paths`` for the files it names, so a name that is not one of them (a path,
another job's file, ``..``) is an action error, never a path handed to ``DOM.setFileInputFiles``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cdp.confinement import ChromeUser
from workers.agent.errors import ActionError


@dataclass(frozen=True)
class Uploads:
    folder: Path
    files: Mapping[str, Path]

    @classmethod
    def write(cls, files: Mapping[str, bytes], owner: ChromeUser | None) -> Uploads:
        """The files written into a new folder (``owner``: the user Chrome runs as, who must read them)."""
        folder = Path(tempfile.mkdtemp(prefix="browserd-uploads-"))
        written = {}
        for name, data in files.items():
            path = folder / name
            if path.parent != folder:  # the spec's names are plain file names; a path never gets here
                raise ValueError(f"input file name {name!r} is not a plain file name")
            path.write_bytes(data)
            path.chmod(0o400)
            if owner is not None:
                os.chown(path, owner.uid, owner.gid)
            written[name] = path
        if owner is not None:
            owner.give(folder)
        folder.chmod(0o500)
        return cls(folder, written)

    def names(self) -> list[str]:
        return sorted(self.files)

    def paths(self, names: list[str], action: str) -> list[str]:
        """The paths of the files ``names`` names; an unknown name is an action error naming the known ones."""
        unknown = [n for n in names if n not in self.files]
        if unknown:
            raise ActionError(f"no input file named {unknown[0]!r}: only the job's input files can be uploaded "
                              f"(they are: {', '.join(self.names())})", action=action)
        return [str(self.files[n]) for n in names]

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def task_note(self) -> str:
        """What the task message says about them: their names, and how they are uploaded."""
        return (f"\nThe job gave you these files to upload, by name: {', '.join(self.names())}. To put one into a "
                "file input, use upload_file with the input's index and the file's name; no other file can be "
                "uploaded.")
