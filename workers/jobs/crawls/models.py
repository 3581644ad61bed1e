"""A crawl as users submit it (``CrawlSpec``) and see it (``CrawlRecord``, ``CrawlLine``). Pure pydantic.

A crawl is a growing batch: each page it visits is one job of its batch (``page_spec`` makes that
job), and a page's job, as it ends, adds the in-scope pages it links to. What each page does is the
crawl's choice: ``extract`` (the page's text as markdown and its links; no model), an agent
``task``, or a ``script`` run once the page is open.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from config.hosts import normalise_entries
from workers.jobs.model.bounds import Networks, Seconds
from workers.jobs.batches.models import BatchCounts, BatchState
from workers.jobs.crawls.urls import DEFAULT_TRACKING
from workers.jobs.model.spec import JobSpec, check_labels
from workers.jobs.model.status import Priority
from workers.jobs.politeness.options import PolitenessOptions

CRAWL_LABEL = "crawl"  # the label naming a page job's crawl (the job's record in the crawl says the rest)
MAX_START_URLS = 100
MAX_SITEMAPS = 20
MAX_FOLLOW_CHARS = 2_000


class PageMode(StrEnum):
    """What a crawl does on each page."""

    extract = "extract"  # the page's text as markdown, and its links: no model
    task = "task"  # the agent's task, on the page
    script = "script"  # a script of actions, run once the page is open


class CrawlSpec(BaseModel):
    """One crawl: where it starts, how far it may go, and what it does on each page."""

    model_config = ConfigDict(extra="forbid")

    start_urls: list[HttpUrl] = Field(default_factory=list, max_length=MAX_START_URLS,
                                      description="Pages the crawl starts from (depth 0).")
    sitemaps: list[HttpUrl] = Field(
        default_factory=list, max_length=MAX_SITEMAPS,
        description="Sitemaps (or sitemap indexes, gzip or not) whose pages are visited at depth 0; the start "
        "sites' robots.txt Sitemap lines are read too unless robots_sitemaps is false.")
    robots_sitemaps: bool = Field(True, description="Also read the sitemaps the start sites' robots.txt names.")
    max_depth: int = Field(3, ge=0, le=100, description="Links followed at most this many hops from a start page.")
    max_pages: int = Field(100, ge=1, le=100_000, description="Pages visited at most (jobs created).")
    max_duration: float | None = Field(None, gt=0, le=7 * 86_400,
                                       description="Seconds after which no new page is queued.")
    include: list[str] = Field(default_factory=list, max_length=50,
                               description="Visit only URLs one of these RE2 patterns matches (searched anywhere); a start URL "
                               "is visited regardless.")
    exclude: list[str] = Field(default_factory=list, max_length=50,
                               description="Never visit URLs one of these RE2 patterns matches.")
    tracking_params: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TRACKING), max_length=100,
        description="Query parameters dropped from every URL before it is compared ('utm_*': a prefix).")
    allowed_domains: list[str] = Field(
        default_factory=list, description="The domains (and subdomains) the crawl may visit; by default the "
        "registrable domains of its start URLs and sitemaps.")
    denied_domains: list[str] = Field(default_factory=list, description="Never these domains (and subdomains).")
    allowed_networks: Networks = Field(default_factory=list,
                                        description="Private networks the pages may be on (as a job's).")
    task: str | None = Field(None, min_length=1, max_length=20_000, description="The agent's task on each page.")
    script: list[dict[str, Any]] | None = Field(None, description="Actions run on each page once it is open.")
    follow: str | None = Field(
        None, min_length=1, max_length=MAX_FOLLOW_CHARS,
        description="Which links to follow, in words: once per page a model scores the page's new links "
        "(in scope, depth and robots.txt already) 0-10 against it; those below follow_min_score are skipped "
        "('follow'), the rest queued best first. A failed or malformed answer: every candidate is queued, as "
        "without it. Unset: the scope rules alone, no model.")
    follow_min_score: int = Field(5, ge=0, le=10, description="With follow: the lowest score of a link followed.")
    output_schema: dict[str, Any] | None = Field(None, description="JSON schema each page's data must satisfy "
                                                 "(with task).")
    politeness: PolitenessOptions = Field(
        default_factory=lambda: PolitenessOptions(respect_robots_txt=True),
        description="As a job's; a crawl respects robots.txt (Disallow and Crawl-delay) by default.")
    timeout: Seconds | None = Field(None, description="Each page's wall-clock limit in seconds.")
    priority: Priority = Priority.normal
    labels: dict[str, str] = Field(default_factory=dict, description="Labels of every page's job.")
    webhook_url: HttpUrl | None = Field(None, description="POSTed once the crawl's last page is done.")

    @model_validator(mode="after")
    def _shape(self) -> CrawlSpec:
        if not self.start_urls and not self.sitemaps:
            raise ValueError("give 'start_urls', 'sitemaps' or both")
        if self.task is not None and self.script is not None:
            raise ValueError("give at most one of 'task' (an agent on each page) or 'script'; neither: extract")
        if self.output_schema is not None and self.task is None:
            raise ValueError("'output_schema' is what the agent's 'task' returns: give it with 'task'")
        if CRAWL_LABEL in self.labels:
            raise ValueError(f"labels: {CRAWL_LABEL!r} is set by browserd (the crawl's id)")
        return self

    @field_validator("allowed_domains", "denied_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        return normalise_entries(value)

    @field_validator("follow")
    @classmethod
    def _follow(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("say which links to follow (or leave 'follow' out: every link in scope)")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        return check_labels(value, reserved=1)  # each page's job also carries the crawl's id

    @property
    def mode(self) -> PageMode:
        return PageMode.task if self.task else PageMode.script if self.script else PageMode.extract

    def seeds(self) -> list[str]:
        """The pages visited first: the start URLs, else the first sitemap's site root (the job that reads
        the sitemaps needs a page of that site to run on)."""
        if self.start_urls:
            return [str(u) for u in self.start_urls]
        first = self.sitemaps[0]
        return [f"{first.scheme}://{first.host}{'' if first.port in (None, 80, 443) else f':{first.port}'}/"]

    def page_spec(self, url: str, crawl_id: str) -> JobSpec:
        """The job that visits ``url`` for this crawl."""
        shared: dict[str, Any] = {
            "allowed_domains": self.allowed_domains, "denied_domains": self.denied_domains,
            "allowed_networks": self.allowed_networks, "politeness": self.politeness, "timeout": self.timeout,
            "priority": self.priority, "labels": {**self.labels, CRAWL_LABEL: crawl_id},
        }
        if self.mode is PageMode.task:
            return JobSpec(task=self.task, start_url=url, output_schema=self.output_schema, **shared)
        if self.mode is PageMode.script:
            return JobSpec(script=self.script, start_url=url, **shared)
        return JobSpec(script=[{"go_to_url": {"url": url}}], **shared)


class CrawlSkips(BaseModel):
    """Links not followed, by reason (a link counts once per page holding it, whatever its spellings there)."""

    scope: int = 0
    depth: int = 0
    robots: int = 0
    dedup: int = 0
    budget: int = 0
    quota: int = 0  # its tenant's queued or daily quota was full when they were found (not marked seen)
    follow: int = 0  # the follow model scored them below follow_min_score (not marked seen)


class CrawlRecord(BaseModel):
    """A crawl's progress: its batch's counters, plus what discovery found and skipped."""

    id: str
    batch_id: str
    tenant: str | None = Field(None, description="The tenant whose key started it (null: the operator's).")
    state: BatchState = Field(description="running | completed (every page queued is done) | cancelling.")
    discovered: int = Field(description="Distinct in-scope URLs found (start URLs, sitemaps, links).")
    queued: int = Field(description="Pages queued for a visit, at most max_pages (a page queued again by a "
                        "resume counts once).")
    frontier: int = Field(0, description="A cancelled crawl's pages still to visit, kept for a resume.")
    resumed: int = Field(0, description="Pages a resume queued again (or for the first time: links found "
                         "after the cancel).")
    visited: int = Field(description="Pages whose visit ended: succeeded + failed.")
    failed: int = Field(description="Pages whose visit failed.")
    counts: BatchCounts
    skipped: CrawlSkips
    sitemap_pages: int = Field(0, description="Pages the sitemaps listed.")
    follow_errors: int = Field(0, description="Pages whose follow call failed or answered out of shape: their "
                               "links were queued by the scope rules alone.")
    sitemap_errors: list[str] = Field(default_factory=list, description="Sitemaps that could not be read, and why.")
    spec: CrawlSpec
    created_at: datetime
    finished_at: datetime | None = None


class CrawlLine(BaseModel):
    """One page of a crawl's results (``GET /v1/crawls/{id}/results``, one per line)."""

    url: str
    depth: int
    parent: str | None = Field(None, description="The page (or sitemap) it was found on; none for a start URL.")
    job_id: str
    status: str
    final_url: str | None = Field(None, description="Where the page ended (after redirects).")
    canonical: str | None = Field(None, description="The page's rel=canonical, when it declares one in scope.")
    links: int | None = Field(None, description="In-scope links the page holds.")
    data: Any = None
    final_answer: str | None = None
    error: str | None = None
    category: str | None = None
    reused_from: str | None = Field(None, description="The page was unchanged since the schedule's last run: the "
                                    "job whose extraction it reused, with no model call.")
