"""Every Redis key browserd's job store uses, in one place.

The layout (``P`` is the prefix, ``browserd:`` by default; nothing else lives under it):

==============================  =========  ============================================================
key                             type       holds
==============================  =========  ============================================================
``P job:{id}``                  hash       the job record (fields: see ``codec``, the only code
                                           besides the Lua scripts that reads or writes them);
                                           expires ``result_ttl`` after the job finishes
``P job:{id}:events``           stream     one entry per step and per state change: fields ``type``
                                           (``state`` | ``step`` | ``agent`` | ``cancel_requested`` |
                                           ``pause_requested`` | ``resume_requested`` | ``session``) and ``data``
                                           (JSON); expires with the record
``P job:{id}:follow-ups``       list       follow-up tasks accepted (``job_follow_up.lua``), JSON {run, task};
                                           the worker holding the job's session pops them (BLPOP)
``P job:{id}:watched``          string     set, with a short TTL renewed by the console, while someone
                                           watches the job's live view
``P job:{id}:screen``           channel    pub/sub: the job's screencast frames (JPEG, base64) while
                                           watched; nothing is kept
``P job:{id}:controller``       string     JSON {who, token, since}: the console session controlling the
                                           job's browser (a takeover), with a short TTL it renews
``P job:{id}:control``          channel    pub/sub: the controller's input events (JSON lists), to the
                                           worker running the job
``P idem:{key}``                string     idempotency key -> job id (SET NX semantics, in the create
                                           script); expires ``result_ttl`` after creation/finish
``P jobs:seq``                  string     counter; a job's ``seq`` orders listings and is its score
``P jobs:all``                  zset       every job id, score ``seq``
``P jobs:state:{state}``        zset       job ids in that state, score ``seq``
``P jobs:label:{k}:{v}``        zset       job ids carrying label k=v (k percent-encoded), score ``seq``
``P jobs:schedule:{id}``        zset       job ids of that schedule's runs (their hash has ``schedule``), score ``seq``
``P workers``                   zset       worker id -> time of its last heartbeat (epoch seconds)
``P worker:{id}``               hash       that worker's host, pid, concurrency, jobs running, sessions kept; short TTL
``P batch:{id}``                hash       a batch (``batches.store``): total, created_at, schedule,
                                           webhook_url, finished_at, and one counter per state: when a
                                           job record has a ``batch`` field, every state transition
                                           does ``HINCRBY`` -1 on the old state's field and +1 on the
                                           new one, atomically; expires ``result_ttl`` after completion
``P batch:{id}:jobs``           list       the batch's job ids in submission order; expires with it
``P batches``                   zset       batch ids, score creation time
``P crawl:{id}``                hash       a crawl (``crawls.store``): id, batch (its growing batch), spec
                                           JSON, created_at, max_pages, max_pages_per_pattern, deadline,
                                           queued, retried (the refused visits queued again), sitemap_pages,
                                           sitemap_errors, ``skipped:{reason}`` counters; its batch's hash
                                           names it (``crawl``), and the batch's completion expires the
                                           crawl's six keys with the batch (``result_ttl``)
``P crawl:{id}:seen``           set        the crawl's normalised URLs queued (or refused by its budget):
                                           ``SADD`` in ``crawl_admit.lua`` is the one-visit rule
``P crawl:{id}:pages``          hash       job id -> JSON {url, depth, parent, final_url, canonical, links,
                                           resumed_as / retried_as (the job standing for it), retries};
                                           and ``lastmod {url}`` -> a sitemap page's lastmod (ISO, UTC)
``P crawl:{id}:frontier``       hash       the cancelled crawl's unvisited URLs, kept to resume from: URL ->
                                           JSON {url, depth, parent, sitemaps, pattern, job (the cancelled queued job)}
``P crawl:{id}:patterns``       hash       URL pattern (``crawls.urls.pattern``) -> pages queued of it: the
                                           per-pattern cap, checked and counted in ``crawl_admit.lua``
``P crawl:{id}:traps``          hash       URL pattern -> links skipped because it was at its cap
``P crawls``                    zset       crawl ids, score creation time
``P schedule:{id}``             hash       a schedule (``schedules.store``): spec JSON, runs, skipped,
                                           last_batch, last_run_at
``P schedules``                 zset       schedule ids, score creation time
``P schedule:{id}:runs``        zset       the schedule's batch ids (its runs), score creation time
``P schedule:{id}:snapshot``    string     JSON of the items and pages its last completed run read
                                           (``schedules.change_store``), what the next run is compared with
``P schedule:{id}:changes``     list       JSON of each run's changes (``schedules.changes.RunChanges``),
                                           newest first, at most ``MAX_RUNS_KEPT``
``P schedule:{id}:reads``       hash       read key -> JSON of what a run's agent read on that page and the
                                           page's fingerprint (``schedules.reads.PageRead``): the next run
                                           reuses it when the page is unchanged; expires ``READS_TTL`` after
                                           the last write
``P credentials``               hash       credential set name -> JSON {secret names, domains, created_at,
                                           the values as one Fernet token} (``secrets.credentials``)
``P profiles``                  hash       auth profile name -> JSON {version, updated_at, cookies,
                                           origins, the storage state as one Fernet token} (``profiles.store``)
``P recipe:{name}``             hash       a recipe (``recipes.store``): ``v:{n}`` each version's JSON (all
                                           kept), ``version`` the current one, ``next``, run counters
                                           (runs, replayed, healed, failed, failing), broken, last_error
``P recipes``                   zset       recipe names, score creation time
``P tenant:{t}:credentials``    hash       tenant t's credential sets, ``P tenant:{t}:profiles`` its auth
``P tenant:{t}:recipe:{name}``  ...        profiles, ``P tenant:{t}:recipe:{name}`` and ``P tenant:{t}:recipes``
                                           its recipes: the same families as the operator's above, under
                                           the tenant's own prefix (``Keys.owned_by``), so two tenants may
                                           use one name and neither's key can name the other's
``P tenants``                   hash       tenant name -> JSON {key id, key's sha256, created_at, revoked,
                                           ceilings} (``tenants.store``); never the key itself
``P tenant-keys``               hash       key id (the key's public prefix) -> tenant name
``P tenant:{t}:usage``          hash       that tenant's jobs by live state (``queued``, ``running``,
                                           ``retrying``): moved by ``set_state`` in ``job_prelude.lua``
                                           in the transition's own call, like a batch's counters
``P tenant:{t}:day:{date}``     string     jobs the tenant submitted on that UTC date (``tenant_admit.lua``); expires
``P tenant:{t}:cost:{date}``    string     USD its jobs' LLM calls cost on that UTC date (``INCRBYFLOAT``); expires
``P tenant:{t}:cost-month:{m}`` string     USD its jobs' LLM calls cost in that UTC month (``YYYY-MM``); expires
``P tenant:{t}:reserved``       zset       admissions counted against ``max_queued`` whose jobs are not recorded
                                           yet: member ``token|jobs``, score when it lapses (its submitter died)
``P tenant:{t}:admitted``       hash       open admission's token -> how many of its jobs are recorded (their
                                           ``set_state``, same call): the queued check counts only the rest
``P tenant:{t}:artifacts``      string     bytes of the tenant's artifacts in the store (``max_artifact_bytes``):
                                           added as a job's are written, taken back when they are deleted
``P artifact-owners``           hash       job id -> ``tenant|bytes``: a tenant's job's artifact bytes, so the
                                           reconciler's deletion of expired folders gives them back
``P tenant:{t}:pending:{prio}`` list       the tenant's job messages (Celery's envelope, ``job id|message``)
                                           waiting for fair dispatch (``tenants.dispatch``), oldest at the right
``P tenant:{t}:inflight``       zset       the tenant's jobs released to the broker and not final yet, score
                                           the release time; a final transition removes its job
``P tenants:pending``           set        tenants with messages waiting in their pending lists
``P tenants:turn``              string     the tenant the dispatcher released last (round-robin)
``P redbeat:*``                 various    RedBeat's schedule entries, due-time zset and beat lock
``P jobs:expiring``             zset       what to drop from the indexes when a record expires: member
                                           ``job {id} {state} [schedule={id} ]{labels JSON}`` or ``batch {id}``, score
                                           the expiry time; written by the final transition, trimmed
                                           by the reconciler (``reconcile``)
``P outbox``                    hash       delivery id (``job.finished:{id}``, ``batch.finished:{id}``;
                                           a resumed crawl's next finish ``batch.finished:{id}:finish2``)
                                           -> JSON {url, event, kind, ref}: a webhook owed, recorded by
                                           the final transition's Lua call, removed once published
``P outbox:due``                zset       the outbox's delivery ids, score the time they were owed
``P webhook:{delivery id}``     string     ``sent``: that delivery reached its receiver; expires
                                           ``result_ttl`` after (``webhooks.guard``)
``P webhook:{delivery id}:try`` string     a copy of that delivery is posting now; expires in seconds
``P webhooks:given_up``         hash       delivery id -> JSON of a delivery given up after its last retry
                                           (``webhooks.given_up``); kept until redelivered
``P webhooks:given_up:order``   zset       those delivery ids, score the time they were given up
``P reconciler:lock``           string     held by the one reconciler pass running (expires)
``P reconciler:due``            string     set by the worker taking this interval's pass (expires)
``P session:{id}``              hash       an interactive session (``sessions.store``): state, worker, options,
                                           url; expires a few seconds after its worker's last heartbeat
``P session:{id}:commands``     list       commands (JSON) waiting for the session's worker, which
                                           blocks on it (BLPOP)
``P session:{id}:reply:{req}``  list       the worker's one reply to request ``req``; expires soon
``P sessions``                  zset       open session ids, score the time their record expires (a
                                           dead worker's sessions drop out by score)
``P polite:{domain}:slots``     zset       politeness: job id -> expiry (Redis time) of its slot on that
                                           registrable domain; renewed by its worker's heartbeat, so a
                                           dead worker's slot lapses; the key expires with its leases
``P polite:{domain}:last``      string     politeness: Redis time of the latest navigation reserved on
                                           that domain (``politeness_navigation_reserve.lua``); expires
``P polite:{domain}:backoff``   hash       politeness: the domain's adaptive back-off (``politeness_backoff.lua``):
                                           level, at (Redis time of the last 429/503/blocked), until (no
                                           navigation before); expires once it has recovered
``P proxy:{pool}:{label}:cooled`` string   a pool's proxy that failed (``features.proxy_pools``): left out by
                                           every worker until it expires (the pool's ``cooldown``)
``P robots:{origin}``           string     JSON {status, body} of that origin's robots.txt; expires
                                           ``BROWSERD_ROBOTS_TTL`` after the fetch
``P console:logout:{sid}``      string     a console session signed out (``daemon.console.access``): its
                                           cookie is refused; expires when the cookie would have
==============================  =========  ============================================================

Index sets are not expired with the records they point to: the reconciler trims them from
``jobs:expiring`` once the records are gone, and readers drop ids whose record is gone.
Job, batch and schedule ids are ``uuid4().hex`` (``ids.new_id``); a string that does not look like
one (``ids.is_id``) names no record, and so can never be spliced into another key.
The Lua scripts (``lua/*.lua``) build these names from the prefix themselves, so a new key
family belongs both here and there.
"""

from __future__ import annotations

from urllib.parse import quote

DEFAULT_PREFIX = "browserd:"


class Keys:
    """Key names under one prefix (tests and side-by-side deployments use their own)."""

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        self.prefix = prefix

    def owned_by(self, tenant: str | None) -> Keys:
        """The keys of ``tenant``'s named objects (credential sets, profiles, recipes): the same
        families under ``P tenant:{t}:``; None, the operator's, is this prefix itself, so what
        single-tenant browserd stored stays where it was. Only those three families are read
        through the result (a tenant name has no ':', so no family of one prefix is another's)."""
        return self if tenant is None else Keys(f"{self.prefix}tenant:{tenant}:")

    def job(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}"

    def events(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}:events"

    def follow_ups(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}:follow-ups"

    def watched(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}:watched"

    def screen(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}:screen"

    def controller(self, job_id: str) -> str:
        """Who controls the job's browser from the console now (a takeover), while renewed."""
        return f"{self.prefix}job:{job_id}:controller"

    def control(self, job_id: str) -> str:
        """Pub/sub channel of the controller's input events, to the worker running the job."""
        return f"{self.prefix}job:{job_id}:control"

    def idempotency(self, key: str) -> str:
        return f"{self.prefix}idem:{key}"

    @property
    def seq(self) -> str:
        return f"{self.prefix}jobs:seq"

    @property
    def all_jobs(self) -> str:
        return f"{self.prefix}jobs:all"

    def state_index(self, state: str) -> str:
        return f"{self.prefix}jobs:state:{state}"

    def label_index(self, key: str, value: str) -> str:
        return f"{self.prefix}jobs:label:{quote(key, safe='')}:{value}"

    def schedule_jobs(self, schedule_id: str) -> str:
        return f"{self.prefix}jobs:schedule:{schedule_id}"

    @property
    def workers(self) -> str:
        return f"{self.prefix}workers"

    def worker(self, worker_id: str) -> str:
        return f"{self.prefix}worker:{worker_id}"

    def batch(self, batch_id: str) -> str:
        return f"{self.prefix}batch:{batch_id}"

    def batch_jobs(self, batch_id: str) -> str:
        return f"{self.prefix}batch:{batch_id}:jobs"

    @property
    def batches(self) -> str:
        return f"{self.prefix}batches"

    def crawl(self, crawl_id: str) -> str:
        return f"{self.prefix}crawl:{crawl_id}"

    def crawl_seen(self, crawl_id: str) -> str:
        return f"{self.prefix}crawl:{crawl_id}:seen"

    def crawl_pages(self, crawl_id: str) -> str:
        return f"{self.prefix}crawl:{crawl_id}:pages"

    def crawl_frontier(self, crawl_id: str) -> str:
        return f"{self.prefix}crawl:{crawl_id}:frontier"

    def crawl_patterns(self, crawl_id: str) -> str:
        return f"{self.prefix}crawl:{crawl_id}:patterns"

    def crawl_traps(self, crawl_id: str) -> str:
        return f"{self.prefix}crawl:{crawl_id}:traps"

    def crawl_refused(self, crawl_id: str) -> str:
        """The jobs whose visit the site refused and another job of the crawl makes again."""
        return f"{self.prefix}crawl:{crawl_id}:refused"

    @property
    def crawls(self) -> str:
        return f"{self.prefix}crawls"

    def schedule(self, schedule_id: str) -> str:
        return f"{self.prefix}schedule:{schedule_id}"

    @property
    def schedules(self) -> str:
        return f"{self.prefix}schedules"

    def schedule_runs(self, schedule_id: str) -> str:
        return f"{self.prefix}schedule:{schedule_id}:runs"

    def schedule_snapshot(self, schedule_id: str) -> str:
        return f"{self.prefix}schedule:{schedule_id}:snapshot"

    def schedule_changes(self, schedule_id: str) -> str:
        return f"{self.prefix}schedule:{schedule_id}:changes"

    def schedule_reads(self, schedule_id: str) -> str:
        return f"{self.prefix}schedule:{schedule_id}:reads"

    @property
    def credentials(self) -> str:
        return f"{self.prefix}credentials"

    def recipe(self, name: str) -> str:
        return f"{self.prefix}recipe:{name}"

    @property
    def recipes(self) -> str:
        return f"{self.prefix}recipes"

    @property
    def tenants(self) -> str:
        return f"{self.prefix}tenants"

    @property
    def tenant_keys(self) -> str:
        return f"{self.prefix}tenant-keys"

    def tenant_usage(self, tenant: str) -> str:
        return f"{self.prefix}tenant:{tenant}:usage"

    def tenant_day(self, tenant: str, date: str) -> str:
        return f"{self.prefix}tenant:{tenant}:day:{date}"

    @property
    def artifact_owners(self) -> str:
        return f"{self.prefix}artifact-owners"

    def tenant_artifacts(self, tenant: str) -> str:
        return f"{self.prefix}tenant:{tenant}:artifacts"

    def tenant_reserved(self, tenant: str) -> str:
        return f"{self.prefix}tenant:{tenant}:reserved"

    def tenant_admitted(self, tenant: str) -> str:
        return f"{self.prefix}tenant:{tenant}:admitted"

    def tenant_month_cost(self, tenant: str, month: str) -> str:
        return f"{self.prefix}tenant:{tenant}:cost-month:{month}"

    def tenant_cost(self, tenant: str, date: str) -> str:
        return f"{self.prefix}tenant:{tenant}:cost:{date}"

    def tenant_pending(self, tenant: str, priority: str) -> str:
        return f"{self.prefix}tenant:{tenant}:pending:{priority}"

    def tenant_inflight(self, tenant: str) -> str:
        return f"{self.prefix}tenant:{tenant}:inflight"

    @property
    def tenants_pending(self) -> str:
        return f"{self.prefix}tenants:pending"

    @property
    def tenants_turn(self) -> str:
        return f"{self.prefix}tenants:turn"

    @property
    def profiles(self) -> str:
        return f"{self.prefix}profiles"

    @property
    def expiring(self) -> str:
        return f"{self.prefix}jobs:expiring"

    @property
    def outbox(self) -> str:
        return f"{self.prefix}outbox"

    @property
    def outbox_due(self) -> str:
        return f"{self.prefix}outbox:due"

    def webhook_sent(self, delivery_id: str) -> str:
        return f"{self.prefix}webhook:{delivery_id}"

    def webhook_trying(self, delivery_id: str) -> str:
        return f"{self.prefix}webhook:{delivery_id}:try"

    @property
    def webhooks_given_up(self) -> str:
        return f"{self.prefix}webhooks:given_up"

    @property
    def webhooks_given_up_order(self) -> str:
        return f"{self.prefix}webhooks:given_up:order"

    @property
    def reconciler_lock(self) -> str:
        return f"{self.prefix}reconciler:lock"

    @property
    def reconciler_due(self) -> str:
        """Set (with a TTL of one interval) by the worker that takes the interval's pass."""
        return f"{self.prefix}reconciler:due"

    def session(self, session_id: str) -> str:
        return f"{self.prefix}session:{session_id}"

    def session_commands(self, session_id: str) -> str:
        return f"{self.prefix}session:{session_id}:commands"

    def session_reply(self, session_id: str, request_id: str) -> str:
        return f"{self.prefix}session:{session_id}:reply:{request_id}"

    @property
    def sessions(self) -> str:
        return f"{self.prefix}sessions"

    def domain_slots(self, domain: str) -> str:
        return f"{self.prefix}polite:{quote(domain, safe='')}:slots"

    def domain_last_navigation(self, domain: str) -> str:
        return f"{self.prefix}polite:{quote(domain, safe='')}:last"

    def domain_backoff(self, domain: str) -> str:
        return f"{self.prefix}polite:{quote(domain, safe='')}:backoff"

    def proxy_cooled(self, pool: str, label: str) -> str:
        """Pool names and labels are the operator's (``config.proxy_pools``: no ':' in either)."""
        return f"{self.prefix}proxy:{pool}:{label}:cooled"

    def robots(self, origin: str) -> str:
        return f"{self.prefix}robots:{quote(origin, safe='')}"

    def console_logout(self, session_id: str) -> str:
        return f"{self.prefix}console:logout:{session_id}"
