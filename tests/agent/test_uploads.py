"""File uploads: the job's input files set on file inputs with ``DOM.setFileInputFiles``, in a plain
page, an iframe and a shadow root; nothing else on the worker's disk can be uploaded.

The fixtures' pages read the file they receive and show its name, size and text, which is what
the model reads in its next state: the upload is asserted as the page saw it.
"""

from __future__ import annotations

import base64
import re

import pytest
from pydantic import ValidationError

from tests.agent.scripted import NAVIGATOR, PLANNER, act, last_state, plan, run
from workers.jobs.model.spec import MAX_INPUT_FILE_BYTES, JobSpec
from workers.jobs.model.status import JobStatus

CV = b"Ada Lovelace, analytical engines\n"
LETTER = b"Dear hiring team\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


FILES = [{"name": "cv.txt", "content_base64": b64(CV)}, {"name": "cover letter.txt", "content_base64": b64(LETTER)}]


def file_input(state: str) -> int:
    found = re.search(r"\[(\d+)\]<input[^>]*type=file", state) or re.search(r"\[(\d+)\]<input", state)
    assert found, state[-2000:]
    return int(found.group(1))


def uploader(*names: str, seen: list[str]):
    """Puts ``names`` into the page's file input, then ends once the page shows it received them."""
    def navigator(request):
        state = last_state(request)
        seen.append(state)
        if "Received " in state:
            return act({"done": {"text": "uploaded", "evidence": ["Received"]}})
        return act({"upload_file": {"index": file_input(state), "files": list(names)}})
    return navigator


@pytest.mark.parametrize("page", ["plain.html", "framed.html"])
async def test_an_input_file_is_uploaded_into_a_plain_and_a_framed_file_input(pool, site, llm, settings, page):
    seen: list[str] = []
    llm.add(PLANNER, plan(), plan(done=True, final_answer="uploaded"))
    llm.responder = uploader("cv.txt", seen=seen)
    result, _, _ = await run(pool, settings, task="Upload my CV", start_url=site.url(f"agent/uploads/{page}"),
                             input_files=FILES)
    assert result.status == JobStatus.succeeded, result.error
    assert "Received cv.txt (33 bytes): Ada Lovelace, analytical engines" in seen[-1]
    assert "upload, by name: cover letter.txt, cv.txt" in str(llm.requests_for(NAVIGATOR)[0]["messages"])
    assert result.steps[0].actions[0].result.startswith("put 'cv.txt' into the file input of ")


async def test_two_files_are_uploaded_into_a_file_input_in_a_shadow_root(pool, site, llm, settings):
    seen: list[str] = []
    llm.add(PLANNER, plan(), plan(done=True, final_answer="uploaded"))
    llm.responder = uploader("cv.txt", "cover letter.txt", seen=seen)
    result, page_text, _ = await run(pool, settings, task="Upload my CV and letter",
                                     start_url=site.url("agent/uploads/shadow.html"), input_files=FILES)
    assert result.status == JobStatus.succeeded, result.error
    assert "[1]<input type=file />" in seen[0]  # offered from inside the component's shadow root
    assert ("Received cv.txt (33 bytes): Ada Lovelace, analytical engines; "
            "cover letter.txt (17 bytes): Dear hiring team") in page_text


async def test_no_other_file_of_the_workers_disk_can_be_uploaded(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="nothing uploaded", outcome="incomplete"))
    llm.add(NAVIGATOR, act({"upload_file": {"index": 1, "files": ["/etc/passwd"]}}),
            act({"upload_file": {"index": 1, "files": ["../cv.txt"]}}),
            act({"upload_file": {"index": 1, "files": ["cv.txt", "cover letter.txt"]}}),
            act({"done": {"text": "could not upload", "success": False}}))
    result, page_text, _ = await run(pool, settings, task="Upload /etc/passwd",
                                     start_url=site.url("agent/uploads/plain.html"), input_files=FILES[:1],
                                     options={"max_failures": 5})
    assert "No file chosen yet." in page_text  # the page never received a file
    errors = [s.error for s in result.steps[:3]]
    assert errors[0] == errors[0].replace("root:", "") and "no input file named '/etc/passwd'" in errors[0]
    assert "only the job's input files can be uploaded (they are: cv.txt)" in errors[0]
    assert "no input file named '../cv.txt'" in errors[1]
    assert "no input file named 'cover letter.txt'" in errors[2]


async def test_a_job_without_input_files_uploads_nothing(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="no", outcome="incomplete"))
    llm.add(NAVIGATOR, act({"upload_file": {"index": 1, "files": ["cv.txt"]}}),
            act({"done": {"text": "no files", "success": False}}))
    result, page_text, _ = await run(pool, settings, task="Upload my CV", start_url=site.url("agent/uploads/plain.html"))
    assert "this job has no input files, so nothing can be uploaded" in result.steps[0].error
    assert "No file chosen yet." in page_text


async def test_a_hostile_page_whose_element_is_no_file_input_gets_nothing(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="no", outcome="incomplete"))
    llm.add(NAVIGATOR, act({"upload_file": {"index": 1, "files": ["cv.txt"]}}),
            act({"done": {"text": "no input", "success": False}}))
    result, _, _ = await run(pool, settings, task="Upload my CV", start_url=site.url("agent/loops/counter.html"),
                             input_files=FILES)
    assert "is not a file input and holds none" in result.steps[0].error


# --- no browser: the spec ---------------------------------------------------------------------

@pytest.mark.parametrize(("files", "problem"), [
    ([{"name": "../etc/passwd", "content_base64": b64(CV)}], "String should match pattern"),
    ([{"name": "a/b.txt", "content_base64": b64(CV)}], "String should match pattern"),
    ([{"name": "cv..txt", "content_base64": b64(CV)}], "'..' is not allowed"),
    ([{"name": "cv.txt"}], "give exactly one of content_base64 or artifact"),
    ([{"name": "cv.txt", "content_base64": b64(CV), "artifact": {"job": "0" * 32, "name": "a.txt"}}],
     "give exactly one of content_base64 or artifact"),
    ([{"name": "cv.txt", "content_base64": "not base64!"}], "not base64"),
    ([{"name": "cv.txt", "content_base64": b64(b"x" * (MAX_INPUT_FILE_BYTES + 1))}], "more than 2 MiB decoded"),
    ([{"name": f"f{i}.txt", "content_base64": b64(b"x" * MAX_INPUT_FILE_BYTES)} for i in range(5)],
     "more than 8 MiB together"),
    ([{"name": "cv.txt", "content_base64": b64(CV)}] * 2, "each file's name once"),
    ([{"name": "cv.txt", "artifact": {"job": "../../etc", "name": "passwd"}}], "String should match pattern"),
    ([{"name": "cv.txt", "artifact": {"job": "0" * 32, "name": "../result.json"}}], "String should match pattern"),
])
def test_input_files_that_are_refused(files, problem):
    with pytest.raises(ValidationError, match=re.escape(problem)):
        JobSpec(task="upload", input_files=files)
