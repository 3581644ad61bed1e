"""The console's submit form takes the files a job may upload (``input_files``), as the API, the CLI
and MCP do: a file too large or with a path for a name is refused next to the form, nothing queued."""

from __future__ import annotations

import base64

from tests.frontends.console import console_client, login
from workers.jobs.model.spec import MAX_INPUT_FILE_BYTES

ADMIN = {"Authorization": "Bearer console-test-token"}


def test_a_file_sent_with_the_form_is_the_jobs_input_file(redis_url: str) -> None:
    with console_client(redis_url) as c:
        csrf = login(c)
        page = c.get("/ui/submit").text
        assert 'enctype="multipart/form-data"' in page and 'type="file" id="input_files"' in page
        made = c.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": "upload my CV"},
                      files=[("input_files", ("cv.txt", b"Jane Doe, 10 years of Python\n", "text/plain"))])
        assert made.status_code == 303, made.text[-800:]
        job_id = made.headers["location"].rsplit("/", 1)[1]
        job = c.get(f"/v1/jobs/{job_id}", headers=ADMIN).json()
        assert [f["name"] for f in job["spec"]["input_files"]] == ["cv.txt"]


def test_a_file_too_large_or_named_with_a_path_is_refused_and_nothing_is_queued(redis_url: str) -> None:
    with console_client(redis_url) as c:
        csrf = login(c)
        before = c.get("/v1/jobs", headers=ADMIN).json()["jobs"]
        big = c.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": "upload"},
                     files=[("input_files", ("big.bin", b"x" * (MAX_INPUT_FILE_BYTES + 10), "application/octet-stream"))])
        assert big.status_code == 422 and "MiB" in big.text and 'data-field="input_files' in big.text, big.text[-800:]
        assert base64.b64encode(b"x" * 30).decode() not in big.text  # the bytes are never echoed
        pathy = c.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": "upload"},
                       files=[("input_files", ("../../etc/passwd", b"root:x:0:0", "text/plain"))])
        assert pathy.status_code == 422 and 'data-field="input_files' in pathy.text, pathy.text[-800:]
        assert c.get("/v1/jobs", headers=ADMIN).json()["jobs"] == before


def test_a_multipart_form_without_its_csrf_token_is_refused(redis_url: str) -> None:
    with console_client(redis_url) as c:
        login(c)
        before = c.get("/v1/jobs", headers=ADMIN).json()["jobs"]
        refused = c.post("/ui/submit", data={"kind": "task", "task": "upload"},
                         files=[("input_files", ("cv.txt", b"x", "text/plain"))])
        assert refused.status_code == 403 and c.get("/v1/jobs", headers=ADMIN).json()["jobs"] == before
