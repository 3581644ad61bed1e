"""PDFs read as text: a tab that shows a PDF, or a PDF the page downloaded, is what ``extract_content``
reads and what ``page.md`` keeps (pypdf's text extraction), instead of the empty viewer page.

Bounded three ways: the bytes by the job's download cap (``BROWSERD_DOWNLOAD_MAX_MB``: a PDF
shown in a tab is fetched again by the page, through the same egress gate, and refused past it),
the pages by ``MAX_PDF_PAGES`` (the first ones are read, the result says how many there are), and
the text by ``BROWSERD_MAX_EXTRACT_CHARS``. A PDF pypdf cannot read is an action error the model
reads, never a crash of the job.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass

import pypdf
from pypdf.errors import PyPdfError

from workers.agent.errors import ActionError

log = logging.getLogger("browserd.agent")

MAX_PDF_PAGES = 50  # pages of one PDF read as text; a longer document is read from its start
PDF_MAGIC = b"%PDF-"
PDF_TYPE = "application/pdf"


@dataclass(frozen=True)
class Document:
    """A PDF's text: ``pages`` read of ``total``; ``cut`` when the text passed its bound."""

    url: str
    text: str
    pages: int
    total: int
    cut: bool = False

    def summary(self) -> str:
        """How the model is told about it."""
        read = f", the first {self.pages} read" if self.pages < self.total else ""
        cut = ", its text cut at BROWSERD_MAX_EXTRACT_CHARS" if self.cut else ""
        return f"a PDF of {self.total} page{'s' if self.total != 1 else ''}{read}{cut}; extract_content reads its text"


def is_pdf(data: bytes) -> bool:
    """Whether ``data`` is a PDF (its header, within the first 1024 bytes as readers allow)."""
    return PDF_MAGIC in data[:1024]


def read_pdf(data: bytes, url: str, max_chars: int) -> Document:
    """The text of the PDF ``data`` (from ``url``), page by page, within the bounds above."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        total = len(reader.pages)
        parts: list[str] = []
        size, cut = 0, False
        for number in range(min(total, MAX_PDF_PAGES)):
            text = (reader.pages[number].extract_text() or "").strip()
            part = f"[page {number + 1} of {total}]\n{text}\n"
            if size + len(part) > max_chars:
                parts.append(part[: max(0, max_chars - size)])
                cut = True
                break
            parts.append(part)
            size += len(part)
    except (PyPdfError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
        log.info("PDF not read: %s: %s", type(exc).__name__, exc)
        raise ActionError(f"the PDF at {url} could not be read: {type(exc).__name__}", action="extract_content") from None
    return Document(url, "".join(parts), len(parts), total, cut)
