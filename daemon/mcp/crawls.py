"""Crawls as MCP tools: ``start_crawl``, ``crawl_status``, ``crawl_results``, ``cancel_crawl``,
``resume_crawl``.

A crawl discovers a site's pages from start URLs and sitemaps and visits each once (``POST
/v1/crawls``); the tools go through the HTTP API like every other tool, so a bad spec is refused
with the API's own message naming the field, and an unknown or another tenant's crawl is the API's
404. ``crawl_results`` returns one page of the results lines at a time (``offset``, ``limit``), so a
crawl of thousands of pages does not come back as one answer.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from daemon.mcp.arguments import flat
from daemon.mcp.backend import Api
from daemon.mcp.calls import api_call

MAX_LINES = 500  # results lines one crawl_results call returns at most

CrawlId = Annotated[str, Field(description="The id start_crawl returned.", min_length=1)]

INSTRUCTIONS = """To crawl a site: start_crawl with start_urls (and/or sitemaps), max_depth and max_pages,
optionally a task (an agent on each page, with an output_schema), a saved recipe replayed on each page
(with its params), or neither (each page's text as markdown and its links), and optionally follow (which
links to follow, in words: a model scores them); follow it with crawl_status, read its pages with crawl_results, stop it with cancel_crawl
and go on with it later with resume_crawl.
"""


class StartCrawlArgs(BaseModel):
    """``start_crawl``'s arguments: the crawl spec's fields, as ``POST /v1/crawls`` takes them."""

    start_urls: Annotated[list[str] | None, Field(description="Pages the crawl starts from (depth 0).")] = None
    sitemaps: Annotated[list[str] | None, Field(description="Sitemaps (or sitemap indexes) whose pages are "
                                                "visited at depth 0.")] = None
    max_depth: Annotated[int | None, Field(description="Links followed at most this many hops (default 3).")] = None
    max_pages: Annotated[int | None, Field(description="Pages visited at most (default 100).")] = None
    max_duration: Annotated[float | None, Field(description="Seconds after which no new page is queued.")] = None
    include: Annotated[list[str] | None, Field(description="Visit only URLs one of these RE2 patterns matches.")] = None
    exclude: Annotated[list[str] | None, Field(description="Never visit URLs one of these RE2 patterns matches.")] = None
    allowed_domains: Annotated[list[str] | None, Field(description="Domains the crawl may visit (default: the "
                                                       "start URLs' registrable domains).")] = None
    denied_domains: Annotated[list[str] | None, Field(description="Domains never visited.")] = None
    allowed_networks: Annotated[list[str] | None, Field(description="Private networks the pages may be on "
                                                        "(CIDRs); closed unless opened here or by the server.")] = None
    task: Annotated[str | None, Field(description="The agent's task on each page (none: each page's markdown "
                                      "and links, no model).")] = None
    recipe: Annotated[str | None, Field(description="A saved recipe (yours) replayed on each page, with no "
                                        "model.")] = None
    params: Annotated[dict[str, str] | None, Field(description="The recipe's parameters, by name.")] = None
    heal: Annotated[bool | None, Field(description="When a recipe step no longer matches a page, let the agent "
                                       "finish it (default true).")] = None
    llm_extraction: Annotated[bool | None, Field(description="Let the recipe's extract_content steps call the "
                                                 "model.")] = None
    output_schema: Annotated[dict[str, Any] | None, Field(description="JSON schema each page's data must "
                                                          "satisfy (with task or recipe).")] = None
    max_pages_per_pattern: Annotated[int | None, Field(description="Pages of one URL pattern queued at most, "
                                                       "against crawler traps (default 200).")] = None
    webhook_url: Annotated[str | None, Field(description="POSTed once, when the crawl completes.")] = None
    page_webhook_url: Annotated[str | None, Field(description="POSTed each page's result when its job "
                                                  "finishes.")] = None
    follow: Annotated[str | None, Field(description="Which links to follow, in words: a model scores each page's "
                                        "new in-scope links 0-10 against it and the crawl follows those at "
                                        "follow_min_score or above, best first (none: every link in scope, no "
                                        "model).")] = None
    follow_min_score: Annotated[int | None, Field(description="With follow: the lowest score followed "
                                                  "(default 5).")] = None
    timeout: Annotated[float | None, Field(description="Each page's wall-clock limit in seconds.")] = None
    labels: Annotated[dict[str, str] | None, Field(description="Labels of every page's job.")] = None
    trailing_slash: Annotated[str | None, Field(description="keep (default: /a/ and /a are two pages), strip (one "
                                                "page, /a) or add (one page, /a/).")] = None
    trailing_slash_sites: Annotated[dict[str, str] | None, Field(description="trailing_slash per site: "
                                                                 "{host: keep|strip|add}.")] = None
    sitemap_modified_since: Annotated[str | None, Field(description="ISO date or datetime: only the sitemap pages "
                                                        "whose lastmod is at or after it (or that have none).")] = None
    retry_blocked: Annotated[int | None, Field(description="Times a page the site answered 429 or 503 is visited "
                                               "again later in the run (default 2; 0: never).")] = None


def register(server: MCPServer, api: Api) -> None:
    """Add the crawl tools to ``server``."""

    @server.tool(annotations=ToolAnnotations(title="Start a crawl", openWorldHint=True))
    @flat(StartCrawlArgs)
    async def start_crawl(args: StartCrawlArgs) -> dict[str, Any]:
        """Start crawling a site: its start URLs' and sitemaps' pages, then the links in scope, each page once."""
        return await api_call(api.start_crawl(args.model_dump(exclude_none=True)))

    @server.tool(annotations=ToolAnnotations(title="Get a crawl", readOnlyHint=True))
    async def crawl_status(crawl_id: CrawlId) -> dict[str, Any]:
        """A crawl's progress: state, discovered, queued, visited, failed, skipped links by reason."""
        return await api_call(api.crawl(crawl_id))

    @server.tool(annotations=ToolAnnotations(title="Read a crawl's pages", readOnlyHint=True))
    async def crawl_results(crawl_id: CrawlId,
                            offset: Annotated[int, Field(ge=0, description="Lines to skip.")] = 0,
                            limit: Annotated[int, Field(ge=1, le=MAX_LINES, description="Lines to return.")] = 100,
                            ) -> dict[str, Any]:
        """One line per page visited so far (URL, depth, parent, status, data, final answer, error), in the
        order pages were queued; page through them with offset and limit."""
        crawl = await api_call(api.crawl(crawl_id))  # an unknown crawl is the API's 404, named
        shown = await api_call(api.crawl_results(crawl_id, offset, limit))
        total = crawl["queued"]  # one line per page queued
        return {"lines": shown, "total": total, "next_offset": offset + len(shown)
                if offset + len(shown) < total else None}

    @server.tool(annotations=ToolAnnotations(title="Cancel a crawl", destructiveHint=True, idempotentHint=True))
    async def cancel_crawl(crawl_id: CrawlId) -> dict[str, Any]:
        """Stop a crawl: no new page is queued, queued pages are cancelled, running ones stop."""
        return await api_call(api.cancel_crawl(crawl_id))

    @server.tool(annotations=ToolAnnotations(title="Resume a crawl", openWorldHint=True))
    async def resume_crawl(crawl_id: CrawlId) -> dict[str, Any]:
        """Go on with a cancelled crawl from where it stopped: the pages it found and had not visited are
        queued again, once; pages visited are not visited again. A completed crawl cannot be resumed."""
        return await api_call(api.resume_crawl(crawl_id))
