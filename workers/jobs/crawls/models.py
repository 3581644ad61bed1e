"""A crawl as users submit it (``CrawlSpec``) and see it (``CrawlRecord``, ``CrawlLine``). Pure pydantic.

A crawl is a growing batch: each page it visits is one job of its batch (``page_spec`` makes that
job), and a page's job, as it ends, adds the in-scope pages it links to. What each page does is the
crawl's choice: ``extract`` (the page's text as markdown and its links; no model), an agent
``task``, a ``script`` run once the page is open, or a saved ``recipe`` replayed on the page.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from config.hosts import BadHost, normalise_entries, parse_entry
from workers.jobs.model.bounds import Networks, Seconds
from workers.jobs.batches.models import BatchCounts, BatchState
from workers.jobs.crawls.sitemaps import lastmod_time
from workers.jobs.crawls.urls import DEFAULT_TRACKING, SlashRules, TrailingSlash, normalise
from workers.jobs.model.spec import JobSpec, RecipeName, check_labels
from workers.jobs.model.status import Priority
from workers.jobs.politeness.options import PolitenessOptions

CRAWL_LABEL = "crawl"  # the label naming a page job's crawl (the job's record in the crawl says the rest)
MAX_START_URLS = 100
MAX_SITEMAPS = 20
DEFAULT_PAGES_PER_PATTERN = 200
"""Pages of one URL pattern a crawl queues by default: more than a site's ordinary listings of one
shape (the test site's 120 items), far fewer than a trap's endless ones. A larger listing needs it
raised; the record's ``traps`` names the patterns that reached it."""
_RECIPE_JOB = JobSpec.model_fields  # the recipe options a crawl hands each page's job, declared once
MAX_TRAPS_SHOWN = 20  # patterns the record lists (those with the most links skipped)
MAX_FOLLOW_CHARS = 2_000


class PageMode(StrEnum):
    """What a crawl does on each page."""

    extract = "extract"  # the page's text as markdown, and its links: no model
    task = "task"  # the agent's task, on the page
    script = "script"  # a script of actions, run once the page is open
    recipe = "recipe"  # a saved recipe (its tenant's), replayed on the page with no model


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
    sitemap_modified_since: datetime | None = Field(
        None, description="Queue only the sitemap pages whose lastmod is at or after this ISO date or datetime "
        "(UTC unless it names a zone); pages the sitemap gives no lastmod are queued; the rest are counted "
        "skipped.lastmod.")
    max_depth: int = Field(3, ge=0, le=100, description="Links followed at most this many hops from a start page.")
    max_pages: int = Field(100, ge=1, le=100_000, description="Pages visited at most (jobs created).")
    max_duration: float | None = Field(None, gt=0, le=7 * 86_400,
                                       description="Seconds after which no new page is queued.")
    max_pages_per_pattern: int | None = Field(
        DEFAULT_PAGES_PER_PATTERN, ge=1, le=100_000,
        description="Pages of one URL pattern queued at most (the host and path with numbers, ids and dates "
        "replaced, the query's keys without values): a crawler trap's endless pages of one shape are cut here, "
        "counted skipped.trap and listed in the record's traps. null: no cap.")
    include: list[str] = Field(default_factory=list, max_length=50,
                               description="Visit only URLs one of these RE2 patterns matches (searched anywhere); a start URL "
                               "is visited regardless.")
    exclude: list[str] = Field(default_factory=list, max_length=50,
                               description="Never visit URLs one of these RE2 patterns matches.")
    tracking_params: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TRACKING), max_length=100,
        description="Query parameters dropped from every URL before it is compared ('utm_*': a prefix).")
    trailing_slash: TrailingSlash = Field(
        TrailingSlash.keep, description="How a path's trailing slash is compared: keep (/a/ and /a are two pages), "
        "strip (one page, /a; the root stays /) or add (one page, /a/; a file name with a dot stays as it is).")
    trailing_slash_sites: dict[str, TrailingSlash] = Field(
        default_factory=dict, max_length=100,
        description="trailing_slash per site: {host: rule}; a host covers its subdomains, the most specific wins.")
    allowed_domains: list[str] = Field(
        default_factory=list, description="The domains (and subdomains) the crawl may visit; by default the "
        "registrable domains of its start URLs and sitemaps.")
    denied_domains: list[str] = Field(default_factory=list, description="Never these domains (and subdomains).")
    allowed_networks: Networks = Field(default_factory=list,
                                        description="Private networks the pages may be on (as a job's).")
    task: str | None = Field(None, min_length=1, max_length=20_000, description="The agent's task on each page.")
    script: list[dict[str, Any]] | None = Field(None, description="Actions run on each page once it is open.")
    recipe: RecipeName | None = Field(
        None, description="A saved recipe (the crawl's tenant's) replayed on each page once it is open, with no "
        "LLM; the page's links are read as in any mode.")
    params: dict[str, str] = _RECIPE_JOB["params"]  # as a recipe job's, for each page's job
    heal: bool = _RECIPE_JOB["heal"]
    llm_extraction: bool = _RECIPE_JOB["llm_extraction"]
    follow: str | None = Field(
        None, min_length=1, max_length=MAX_FOLLOW_CHARS,
        description="Which links to follow, in words: once per page a model scores the page's new links "
        "(in scope, depth and robots.txt already) 0-10 against it; those below follow_min_score are skipped "
        "('follow'), the rest queued best first. A failed or malformed answer: every candidate is queued, as "
        "without it. Unset: the scope rules alone, no model.")
    follow_min_score: int = Field(5, ge=0, le=10, description="With follow: the lowest score of a link followed.")
    output_schema: dict[str, Any] | None = Field(None, description="JSON schema each page's data must satisfy "
                                                 "(with task or recipe).")
    politeness: PolitenessOptions = Field(
        default_factory=lambda: PolitenessOptions(respect_robots_txt=True),
        description="As a job's; a crawl respects robots.txt (Disallow and Crawl-delay) by default.")
    timeout: Seconds | None = Field(None, description="Each page's wall-clock limit in seconds.")
    priority: Priority = Priority.normal
    labels: dict[str, str] = Field(default_factory=dict, description="Labels of every page's job.")
    webhook_url: HttpUrl | None = Field(None, description="POSTed once the crawl's last page is done.")
    page_webhook_url: HttpUrl | None = Field(
        None, description="POSTed each page's result when its job finishes (each page's own job.finished webhook).")
    retry_blocked: int = Field(2, ge=0, le=10, description="Times a page the site answered HTTP 429 or 503 is "
                               "visited again later in the run, once the site's back-off allows (0: never).")

    @model_validator(mode="after")
    def _shape(self) -> CrawlSpec:
        if not self.start_urls and not self.sitemaps:
            raise ValueError("give 'start_urls', 'sitemaps' or both")
        if sum(x is not None for x in (self.task, self.script, self.recipe)) > 1:
            raise ValueError("give at most one of 'task' (an agent on each page), 'script' or 'recipe'; none: extract")
        if self.params and self.recipe is None:
            raise ValueError("'params' are a recipe's parameters: give them with 'recipe'")
        if not self.heal and self.recipe is None:
            raise ValueError("'heal' applies to a recipe: give it with 'recipe'")
        if self.llm_extraction and self.recipe is None:
            raise ValueError("'llm_extraction' applies to a recipe: give it with 'recipe'")
        if self.output_schema is not None and self.task is None and self.recipe is None:
            raise ValueError("'output_schema' is what the agent's 'task' (or a 'recipe') returns: give it with one")
        if CRAWL_LABEL in self.labels:
            raise ValueError(f"labels: {CRAWL_LABEL!r} is set by browserd (the crawl's id)")
        return self

    @field_validator("allowed_domains", "denied_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        return normalise_entries(value)

    @field_validator("trailing_slash_sites")
    @classmethod
    def _slash_sites(cls, value: dict[str, TrailingSlash]) -> dict[str, TrailingSlash]:
        try:
            return {str(parse_entry(host)): rule for host, rule in value.items()}
        except BadHost as exc:
            raise ValueError(str(exc)) from None

    @field_validator("sitemap_modified_since", mode="before")
    @classmethod
    def _since(cls, value: Any) -> Any:
        if value is None or isinstance(value, datetime):
            return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
        when = lastmod_time(value) if isinstance(value, str) else None
        if when is None:
            raise ValueError("give an ISO date or datetime, as a sitemap's lastmod is written (2026-11-01, "
                             "2026-11-01T10:30:00Z)")
        return when
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
        if self.task:
            return PageMode.task
        return PageMode.script if self.script else PageMode.recipe if self.recipe else PageMode.extract

    def normalise(self, url: str) -> str | None:
        """``url`` spelt as this crawl compares URLs (its tracking parameters, its trailing-slash rules)."""
        return normalise(url, self.tracking_params,
                         _slash_rules(self.trailing_slash, tuple(self.trailing_slash_sites.items())))

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
            "webhook_url": self.page_webhook_url,
        }
        if self.mode is PageMode.task:
            return JobSpec(task=self.task, start_url=url, output_schema=self.output_schema, **shared)
        if self.mode is PageMode.script:
            return JobSpec(script=self.script, start_url=url, **shared)
        if self.mode is PageMode.recipe:  # the page's URL wins over the recipe's own (features.crawls)
            return JobSpec(recipe=self.recipe, params=self.params, heal=self.heal, llm_extraction=self.llm_extraction,
                           start_url=url, output_schema=self.output_schema, **shared)
        return JobSpec(script=[{"go_to_url": {"url": url}}], **shared)


@lru_cache(maxsize=256)
def _slash_rules(default: TrailingSlash, sites: tuple[tuple[str, TrailingSlash], ...]) -> SlashRules:
    """A spec's trailing-slash rules, read once (not per link: a page may hold thousands)."""
    return SlashRules.of(default, dict(sites))


class CrawlSkips(BaseModel):
    """Links not followed, by reason (a link counts once per page holding it, whatever its spellings there)."""

    scope: int = 0
    depth: int = 0
    robots: int = 0
    dedup: int = 0
    budget: int = 0
    lastmod: int = 0  # sitemap pages last modified before the crawl's sitemap_modified_since
    quota: int = 0  # its tenant's queued or daily quota was full when they were found (not marked seen)
    trap: int = 0  # their URL pattern had max_pages_per_pattern pages queued already
    follow: int = 0  # the follow model scored them below follow_min_score (not marked seen)


class CrawlTrap(BaseModel):
    """A URL pattern that reached the crawl's max_pages_per_pattern, and the links of it not queued."""

    pattern: str
    skipped: int


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
    failed: int = Field(description="Pages whose visit failed (a page the site refused and that was queued "
                        "again counts once, as its last visit ended).")
    retried: int = Field(0, description="Visits the site refused (HTTP 429 or 503) queued again later in the "
                         "run (retry_blocked); the batch's counts count each as a failed job.")
    counts: BatchCounts
    skipped: CrawlSkips
    traps: list[CrawlTrap] = Field(default_factory=list, description="URL patterns that reached max_pages_per_pattern, "
                                   f"most links skipped first (at most {MAX_TRAPS_SHOWN}).")
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
    lastmod: str | None = Field(None, description="When the sitemap that listed the page says it last changed "
                                "(ISO, UTC); none for a page no sitemap listed with a readable lastmod.")
    reused_from: str | None = Field(None, description="The page was unchanged since the schedule's last run: the "
                                    "job whose extraction it reused, with no model call.")
