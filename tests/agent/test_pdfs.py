"""PDFs are read: a tab that shows a PDF, or a PDF a page downloads, is what ``extract_content`` reads
(its text, page by page) and what ``page.md`` keeps, bounded in pages and size.

The PDFs are made by ``tests.support.pdfs`` and served on 127.0.0.1; the scripted extractor
reads the text it is sent, as a real model would, so the price in ``data`` came out of the PDF.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.agent.scripted import EXTRACTOR, NAVIGATOR, PLANNER, act, plan, run
from tests.agent.test_artifacts import folder, storing  # noqa: F401  (the fixture)
from tests.support.jobs import run_job
from tests.support.llm_server import Reply, offered_tool
from tests.support.pdfs import text_pdf
from workers.agent.documents import MAX_PDF_PAGES, read_pdf
from workers.agent.errors import ActionError
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus

PRICES = text_pdf([["Price list 2026", "Kettle K-100: 39.90 EUR"], ["Toaster T-7: 24.50 EUR"]])
SCHEMA = {"type": "object", "required": ["product", "price"],
          "properties": {"product": {"type": "string"}, "price": {"type": "number"}}}
PRICE = re.compile(r"(Kettle [\w-]+): ([\d.]+) EUR")


class PdfHandler(BaseHTTPRequestHandler):
    """``/prices.pdf`` shown inline, ``/download/prices.pdf`` as an attachment, ``/`` a page linking it,
    ``/long.pdf`` 60 pages, ``/broken.pdf`` a PDF header and nonsense."""

    def log_message(self, *args: object) -> None:
        """Quiet: the test reads what the job read."""

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/":
            body, kind = b'<!doctype html><title>Prices</title><a href="/download/prices.pdf">Price list</a>', "text/html"
        elif self.path == "/long.pdf":
            body, kind = text_pdf([[f"Page {n} says {n * 3}"] for n in range(1, 61)]), "application/pdf"
        elif self.path == "/broken.pdf":
            body, kind = b"%PDF-1.4\n" + b"\x00garbage" * 100, "application/pdf"
        else:
            body, kind = PRICES, "application/pdf"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        if self.path.startswith("/download/"):
            self.send_header("Content-Disposition", 'attachment; filename="prices.pdf"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def pdf_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), PdfHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def extractor(request) -> Reply:
    text = request["messages"][-1]["content"]
    found = PRICE.search(text)
    return Reply.tool({"product": found.group(1), "price": float(found.group(2))} if found else {"product": "", "price": 0})


async def kettle_price(pool, pdf_site, llm, settings, first: dict):
    """The job asking for the kettle's price: ``first`` reaches the PDF, then it is extracted."""
    llm.add(PLANNER, plan(), plan(done=True, final_answer="Kettle K-100 costs 39.90 EUR"))
    llm.add(NAVIGATOR, act(first), act({"extract_content": {"goal": "the kettle's price"}}),
            act({"done": {"text": "Kettle K-100 costs 39.90 EUR", "evidence": ["Kettle K-100: 39.90 EUR"]}}))
    llm.responder = extractor
    result, _, url = await run(pool, settings, task="What does the kettle cost?", start_url=f"{pdf_site}/",
                               output_schema=SCHEMA)
    assert result.status == JobStatus.succeeded, result.error
    return result, url


async def test_a_pdf_opened_in_the_tab_is_extracted_into_the_schema(pool, pdf_site, llm, settings):
    result, url = await kettle_price(pool, pdf_site, llm, settings, {"go_to_url": {"url": f"{pdf_site}/prices.pdf"}})
    assert url.endswith("/prices.pdf")
    assert result.data == {"product": "Kettle K-100", "price": 39.9}
    assert result.steps[0].actions[0].result == (f"navigated to {pdf_site}/prices.pdf: a PDF of 2 pages; "
                                                 "extract_content reads its text")
    sent = [r["messages"][-1]["content"] for r in llm.requests_for(EXTRACTOR)]
    assert "[page 1 of 2]" in sent[-1] and "Toaster T-7: 24.50 EUR" in sent[-1]


async def test_a_downloaded_pdf_is_read_by_extract_content(pool, pdf_site, llm, settings):
    def model(request) -> Reply:
        """Extracts once the download's note says it is a PDF (waiting until then), then answers."""
        if offered_tool(request) == EXTRACTOR:
            return extractor(request)
        history = str(request["messages"])
        if "extracted from " in history:
            return act({"done": {"text": "Kettle K-100 costs 39.90 EUR", "evidence": ["Kettle K-100: 39.90 EUR"]}})
        if "it is a PDF: extract_content reads its text" in history:
            return act({"extract_content": {"goal": "the kettle's price"}})
        return act({"wait": {"seconds": 0.2}})

    llm.add(PLANNER, plan(), plan(done=True, final_answer="Kettle K-100 costs 39.90 EUR"))
    llm.add(NAVIGATOR, act({"click_element": {"index": 1}}))
    llm.responder = model
    result, _, url = await run(pool, settings, task="What does the kettle cost?", start_url=f"{pdf_site}/",
                               output_schema=SCHEMA, options={"planning_interval": 20})
    assert result.status == JobStatus.succeeded, result.error
    assert url == f"{pdf_site}/"  # the tab stayed on the page; the PDF was downloaded
    assert [d.name for d in result.downloads] == ["prices.pdf"]
    assert result.data == {"product": "Kettle K-100", "price": 39.9}


async def test_a_long_pdf_is_read_up_to_its_bound_and_a_broken_one_is_an_action_error(pool, pdf_site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="read", outcome="incomplete"))
    llm.add(NAVIGATOR, act({"go_to_url": {"url": f"{pdf_site}/long.pdf"}}),
            act({"extract_content": {"goal": "everything"}}),
            act({"go_to_url": {"url": f"{pdf_site}/broken.pdf"}}),
            act({"extract_content": {"goal": "everything"}}),
            act({"done": {"text": "read", "success": False}}))
    llm.add(EXTRACTOR, Reply.tool({"content": "pages"}))
    result, _, _ = await run(pool, settings, task="Read the PDFs", start_url=f"{pdf_site}/",
                             options={"max_failures": 5, "planning_interval": 10})
    assert result.steps[0].actions[0].result.endswith(f"a PDF of 60 pages, the first {MAX_PDF_PAGES} read; "
                                                      "extract_content reads its text")
    sent = llm.requests_for(EXTRACTOR)[0]["messages"][-1]["content"]
    assert f"Page {MAX_PDF_PAGES} says" in sent and f"Page {MAX_PDF_PAGES + 1} says" not in sent
    assert "could not be read" in result.steps[2].actions[0].result
    assert "the PDF at " in result.steps[3].error and "could not be read" in result.steps[3].error


async def test_page_md_keeps_the_text_of_the_pdf_the_tab_shows(pool, pdf_site, folder):  # noqa: F811
    spec = JobSpec(script=[{"go_to_url": {"url": f"{pdf_site}/prices.pdf"}}], artifacts={"page": "always"})
    async with pool.lease() as lease:
        result = await run_job(spec, lease, settings=storing(None, folder), job_id=folder.job_id)
    assert result.status == JobStatus.succeeded, result.error
    text = folder.read("page.md").decode()
    assert "[page 1 of 2]" in text and "Kettle K-100: 39.90 EUR" in text


# --- no browser ---------------------------------------------------------------------------------

def test_the_text_of_a_pdf_is_bounded_in_characters():
    document = read_pdf(text_pdf([[f"Line {n} " + "x" * 80] for n in range(1, 11)]), "http://x/a.pdf", 300)
    assert document.cut and len(document.text) == 300 and document.total == 10
    with pytest.raises(ActionError, match="could not be read"):
        read_pdf(b"%PDF-1.4\n" + b"\x00" * 50, "http://x/b.pdf", 1000)
