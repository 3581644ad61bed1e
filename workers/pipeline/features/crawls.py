"""Crawls: a page job of a crawl, as it ends, adds the pages it found to the crawl.

A crawl's page is a job like any other (``workers.jobs.crawls``); this feature only acts on jobs
the crawl's record names (``crawl:{id}:pages``; the ``crawl`` label only says which crawl to ask).
At ``settle``, before the page's result is recorded, it reads the page's links from the capture
the browser already holds (the DOM snapshot's anchors, every frame; captured once more only when
the last action changed the page), normalises them, keeps those in the crawl's scope and depth
and allowed by the site's robots.txt, and queues the new ones (``lifecycle.crawling.grow``). Doing
it before the record is what keeps the crawl's batch from completing while a found page is still
to be visited. The job that visits the first seed also reads the crawl's sitemaps (its own list and
the start sites' robots.txt ``Sitemap:`` lines), through the job's egress gate, once its links are
queued (the same order as one list, so the same budget; the workers visit the links meanwhile).

A page whose job was cancelled (the crawl's cancel) before it opened the page goes to the crawl's
frontier, as its queued pages do, for a resume to visit.

With the crawl's ``follow`` task, the candidates left after scope, depth and robots.txt that the
crawl has not seen are scored by one model call (``workers.agent.follow``): those below
``follow_min_score`` are skipped (``follow``), the rest queued best first, so the page budget goes
to the best links. The call is the page job's: its tokens join the result's totals and its cost the
result's ``cost_usd`` (``Costs`` settles after this feature). A call that fails or answers out of
shape never fails the page: its candidates are queued by the scope rules alone, and the crawl's
``follow_errors`` counts it.

In ``extract`` mode the page's data is its text as markdown and its in-scope links. In ``recipe``
mode (prepare) the recipe is replayed on the page the job visits, not on the recipe's own start URL
(``RecipeReplay`` sets the job up as the recipe's, start URL included, just before).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import workers.jobs.metrics as metrics
from config.logs import bind
from workers.agent.follow import FollowFailed, FollowLink, FollowUsage, score_links
from workers.agent.secrets import Secrets
from workers.jobs.crawls.models import CRAWL_LABEL, CrawlSpec, PageMode
from workers.jobs.crawls.sitemaps import SitemapError, lastmod_time, parse_sitemap, robots_sitemaps
from workers.jobs.crawls.store import CrawlStore, FoundURL, PageInfo
from workers.jobs.crawls.scope import Scope, scope_of
from workers.jobs.crawls.urls import SKIP
from workers.jobs.errors import PageRequeued
from workers.jobs.ids import is_id
from workers.jobs.lifecycle.crawling import grow, retry_page
from workers.jobs.model.result import JobResult
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.politeness.options import limits_for
from workers.jobs.politeness.robots import RobotsCache, RobotsFile, robots_url
from workers.jobs.politeness.slots import SiteAnswer
from workers.pipeline.feature import Feature, Services
from workers.pipeline.robots_lookup import robots_file
from workers.pipeline.run import JobRun
from workers.pipeline.side_fetch import SideDoorRefused, side_fetch

log = logging.getLogger("browserd.crawls")

CAPTURE_SECONDS = 10.0  # how long reading the final page's links may take
SITEMAP_FILES = 50  # sitemap files (an index's children included) one crawl reads at most
SITEMAP_BYTES = 10 * 1024 * 1024  # compressed bytes read of one sitemap file
SITEMAP_TIMEOUT = 30.0


class Crawls(Feature):
    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.crawls = CrawlStore(services.store) if services.store is not None else None
        self.robots = (RobotsCache(services.redis, services.keys, self.settings.robots_ttl)
                       if services.redis is not None else None)

    async def settle(self, run: JobRun, result: JobResult) -> JobResult:
        crawl_id = run.spec.labels.get(CRAWL_LABEL)
        if self.crawls is None or not crawl_id or not is_id(crawl_id):
            return result
        page = await self.crawls.page(crawl_id, run.job_id)
        held = await self.crawls.spec(crawl_id)
        if page is None or held is None:  # not a page of that crawl (a label anyone may set), or it is gone
            return result
        if page.retried_as is not None:  # a redelivered attempt whose page was already queued again
            return _superseded(result, page)
        before, refused = result, _refused_by_site(run, result, page.url, held.spec)
        if refused.status in (JobStatus.succeeded, JobStatus.failed):
            metrics.observe_crawl_pages(refused.status.value)
        try:
            result = await self._grow(run, refused, crawl_id, page, held.spec)
        except Exception:  # the page's own result stands; what it found is lost, not the page
            log.exception("crawl %s: job %s: the page's links were not queued", crawl_id, run.job_id)
            result = refused
        if refused is before:  # not refused by the site (429/503): nothing to visit again
            return result
        return await self._retry(run, result, crawl_id, page)

    async def prepare(self, run: JobRun) -> None:
        """A crawl's page replaying a recipe opens its own page: the recipe's steps run there. A page
        job run again (its worker was killed after the site refused it) whose page was queued again
        meanwhile does not visit the site a second time: that job visits it."""
        crawl_id = run.spec.labels.get(CRAWL_LABEL)
        replays = run.inputs.replay is not None and run.spec.start_url is not None
        if self.crawls is None or not crawl_id or not is_id(crawl_id) or not (replays or run.attempt > 1):
            return
        page = await self.crawls.page(crawl_id, run.job_id)
        if page is None:  # not a page of that crawl (a label anyone may set)
            return
        if run.attempt > 1 and page.retried_as is not None:
            raise PageRequeued(f"the site refused this page's visit and job {page.retried_as} visits it again")
        if replays:
            run.inputs.spec = run.inputs.spec.model_copy(update={"start_url": run.spec.start_url})

    async def _retry(self, run: JobRun, result: JobResult, crawl_id: str, page: PageInfo) -> JobResult:
        """The site refused the page (429/503): queue it again (``retry_page``), and say so in the error."""
        assert self.crawls is not None
        try:
            again = await retry_page(self.crawls, crawl_id, run.job_id, page.url, self.settings)
        except Exception:  # the refusal stands as the page's result
            log.exception("crawl %s: job %s: the refused page was not queued again", crawl_id, run.job_id)
            return result
        if again.job_id is None:
            return result
        return result.model_copy(update={"error": f"{result.error}; the page is visited again later in the run "
                                                  f"(job {again.job_id})"})

    async def _grow(self, run: JobRun, result: JobResult, crawl_id: str, page: PageInfo,
                    spec: CrawlSpec) -> JobResult:
        assert self.crawls is not None
        state = await self._state(run)
        if result.status is JobStatus.cancelled and (state is None or spec.normalise(state.url) is None):
            await self.crawls.hold(crawl_id, [run.job_id])  # cancelled before it opened the page: resume visits it
            return result
        scope, skips = scope_of(spec), Counter[str]()
        in_scope: list[str] = []
        found: list[FoundURL] = []
        anchors = state.links() if state is not None else []
        links = [spec.normalise(link.href) for link in anchors]
        for url in dict.fromkeys(u for u in links if u is not None):
            if not scope.admits(url):
                skips[SKIP.scope] += 1
                continue
            in_scope.append(url)
            if page.depth + 1 > spec.max_depth:
                skips[SKIP.depth] += 1
            else:
                found.append(FoundURL(url, page.depth + 1, page.url))
        found = await self._allowed(run, spec, found, skips)
        if spec.follow and found:
            texts = {url: link.text for link, url in reversed(list(zip(anchors, links))) if url}  # the first text
            chosen = await self._followed(run, spec, crawl_id, found, texts, skips)
            found, result = chosen.found, _charged(result, chosen.usage)
        final = spec.normalise(state.url) if state is not None else None
        canonical = _canonical(state, scope, spec)
        await self.crawls.mark_seen(crawl_id, [u for u in (final, canonical) if u and u != page.url])
        await grow(self.crawls, crawl_id, found, self.settings)
        if page.sitemaps:  # after the page's own links are queued: the workers start on them meanwhile
            mapped = await self._sitemap_pages(run, spec, crawl_id, scope, skips)
            await grow(self.crawls, crawl_id, await self._allowed(run, spec, mapped, skips), self.settings)
        await self.crawls.count_skips(crawl_id, dict(skips))
        metrics.observe_crawl_skips(dict(skips))
        await self.crawls.note_page(crawl_id, run.job_id, final_url=final, canonical=canonical, links=len(in_scope))
        if spec.mode is PageMode.extract and result.status is JobStatus.succeeded and state is not None:
            result.data = {"markdown": state.text(), "links": in_scope}
        return result

    async def _followed(self, run: JobRun, spec: CrawlSpec, crawl_id: str, found: list[FoundURL],
                        texts: dict[str, str], skips: Counter[str]) -> _Followed:
        """The candidates the crawl's follow model scored at least ``follow_min_score``, best first
        (the ones seen already go on to ``grow``, which counts them ``dedup``); all of them when the
        call gives no usable scores."""
        assert self.crawls is not None and spec.follow is not None
        fresh = await self.crawls.unseen(crawl_id, [c.url for c in found])
        new = [c for c, is_new in zip(found, fresh) if is_new]
        if not new:
            return _Followed(found, FollowUsage())
        hidden = (run.session.hidden if run.session is not None
                  else Secrets(run.inputs.secrets, run.inputs.totp, run.inputs.secret_domains))
        try:
            scored = await score_links(run.inputs.config.llm, run.spec, spec.follow,
                                       [FollowLink(c.url, texts.get(c.url, "")) for c in new],
                                       secrets=hidden, telemetry=run.inputs.telemetry)
        except Exception as exc:  # a model that fails, times out or lies never fails the page
            usage = exc.usage if isinstance(exc, FollowFailed) else FollowUsage()
            with bind(crawl=crawl_id, job_id=run.job_id, links=len(new), follow_error=str(exc)):
                log.warning("crawl %s: job %s: the follow model gave no usable scores (%s): the page's %d links "
                            "go by the scope rules", crawl_id, run.job_id, exc, len(new))
            await self.crawls.note_follow_error(crawl_id)
            return _Followed(found, usage)
        kept = sorted((-score, i) for i, score in enumerate(scored.scores)
                      if score is not None and score >= spec.follow_min_score)
        skips[SKIP.follow] += len(new) - len(kept)
        return _Followed([new[i] for _, i in kept] + [c for c, is_new in zip(found, fresh) if not is_new],
                         scored.usage)

    async def _state(self, run: JobRun) -> Any | None:
        """The page as the browser last captured it (captured again only if it changed since)."""
        ctx = run.session.ctx if run.session is not None else None
        if ctx is None:
            return None
        try:
            async with asyncio.timeout(CAPTURE_SECONDS):
                return await ctx.browser.state()
        except Exception as exc:  # a page that cannot be read has no links to give
            log.info("job %s: the final page could not be read for links: %s", run.job_id, exc)
            return None

    async def _allowed(self, run: JobRun, spec: CrawlSpec, found: list[FoundURL],
                       skips: Counter[str]) -> list[FoundURL]:
        """The candidates the sites' robots.txt allows (when the crawl respects it, as by default)."""
        if self.robots is None or not found or not limits_for(spec.politeness, self.settings,
                                                               refuse=False).respect_robots_txt:
            return found
        agent = self.settings.robots_user_agent
        egress = run.lease.egress if run.lease is not None else None
        kept = []
        files: dict[str, RobotsFile | None] = {}
        for c in found:
            origin = robots_url(c.url).origin
            if origin not in files:
                try:
                    files[origin] = await robots_file(self.robots, egress, c.url, agent)
                except SideDoorRefused:
                    files[origin] = None  # the job's egress policy refuses that site: out of its reach
            robots = files[origin]
            if robots is None:
                skips[SKIP.scope] += 1
            elif robots.refusal(c.url, agent) is None:
                kept.append(c)
            else:
                skips[SKIP.robots] += 1
        return kept

    async def _sitemap_pages(self, run: JobRun, spec: CrawlSpec, crawl_id: str, scope: Scope,
                             skips: Counter[str]) -> list[FoundURL]:
        """Every in-scope page the crawl's sitemaps list (indexes followed, at most ``SITEMAP_FILES``
        files), as depth-0 candidates whose parent is the sitemap that listed them; with
        ``sitemap_modified_since``, only those whose lastmod is not older (or that have none: the
        site did not say, so the page may have changed), the others counted ``skipped:lastmod``.
        Each page's lastmod (the latest, if listed twice) is kept for its results line."""
        assert self.crawls is not None
        egress = run.lease.egress if run.lease is not None else None
        if egress is None:
            return []
        agent = self.settings.robots_user_agent
        queue = [str(s) for s in spec.sitemaps]
        if spec.robots_sitemaps and self.robots is not None:
            for origin in dict.fromkeys(robots_url(u).origin for u in spec.seeds()):
                try:
                    queue += robots_sitemaps((await robots_file(self.robots, egress, origin + "/", agent)).body)
                except SideDoorRefused as exc:
                    log.info("crawl %s: %s", crawl_id, exc)
        read: set[str] = set()
        pages: list[FoundURL] = []
        errors: list[str] = []
        lastmods: dict[str, datetime] = {}
        old: set[str] = set()
        listed = 0
        while queue and len(read) < SITEMAP_FILES:
            address = queue.pop(0)
            if address in read:
                continue
            read.add(address)
            try:
                got = await side_fetch(egress, address, f"{agent} (sitemap)", max_bytes=SITEMAP_BYTES,
                                       timeout=SITEMAP_TIMEOUT)
                if got.status != 200:
                    raise SitemapError(f"HTTP {got.status}" if got.status else got.error)
                sitemap = parse_sitemap(got.body)
            except (SideDoorRefused, SitemapError) as exc:
                errors.append(f"{address}: {exc}")
                continue
            queue += [e.loc for e in sitemap.sitemaps]
            for entry in sitemap.pages:
                url = spec.normalise(entry.loc)
                if url is None or not scope.admits(url):
                    continue
                listed += 1
                when = lastmod_time(entry.lastmod)
                if when is not None:
                    lastmods[url] = max(when, lastmods.get(url, when))
                if when is not None and spec.sitemap_modified_since and when < spec.sitemap_modified_since:
                    old.add(url)
                else:
                    pages.append(FoundURL(url, 0, address))
        old -= {c.url for c in pages}  # listed twice, once recent enough (or with no lastmod): queued
        skips[SKIP.lastmod] += len(old)
        await self.crawls.note_sitemaps(crawl_id, listed, errors)
        await self.crawls.note_lastmod(crawl_id, {url: when.isoformat() for url, when in lastmods.items()})
        return pages


@dataclass(frozen=True)
class _Followed:
    """The candidates a follow call kept (best first) and what the call cost."""

    found: list[FoundURL]
    usage: FollowUsage


def _charged(result: JobResult, usage: FollowUsage) -> JobResult:
    """The result with the follow call's tokens and calls in its totals (its cost: ``Costs``)."""
    if not usage.calls:
        return result
    totals = result.totals.model_copy(update={
        "input_tokens": result.totals.input_tokens + usage.input_tokens,
        "output_tokens": result.totals.output_tokens + usage.output_tokens,
        "llm_calls": result.totals.llm_calls + usage.calls})
    return result.model_copy(update={"totals": totals})


def _refused_by_site(run: JobRun, result: JobResult, url: str, spec: CrawlSpec) -> JobResult:
    """A page the site answered 429 or 503 was not read: its visit failed (``blocked_by_site``), so
    what it showed (the site's refusal) is not taken for the page's data, nor for a change of it."""
    answer = run.get(SiteAnswer)
    if answer is None or not answer.slows or result.status is not JobStatus.succeeded \
            or spec.normalise(answer.url) != url:
        return result
    wait = f", Retry-After {answer.retry_after:g}s" if answer.retry_after is not None else ""
    return result.model_copy(update={
        "status": JobStatus.failed, "category": FailureCategory.blocked_by_site, "data": None,
        "error": f"the site answered HTTP {answer.status} to {url}{wait}: the page was not read (its site is "
                 "slowed down for every worker)"})


def _superseded(result: JobResult, page: PageInfo) -> JobResult:
    """The result of a page job whose page another job visits again: never the page's result (its
    line is that job's), so never a success, whatever this attempt saw."""
    if result.status is not JobStatus.succeeded:
        return result
    return result.model_copy(update={
        "status": JobStatus.failed, "category": FailureCategory.blocked_by_site, "data": None,
        "error": f"the site refused this page's visit and job {page.retried_as} visits it again"})


def _canonical(state: Any | None, scope: Scope, spec: CrawlSpec) -> str | None:
    """The page's rel=canonical, normalised, when it declares one the crawl may visit."""
    raw = state.canonical() if state is not None else None
    url = spec.normalise(raw) if raw else None
    return url if url is not None and scope.admits(url) else None
