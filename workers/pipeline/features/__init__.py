"""The registry: every feature of a job's run, in the order its hooks are called at each stage.

The order matters where one feature reads what another wrote: the recipe (which may change the
spec the job runs as) comes before politeness (which takes the slot of that spec's site); the
recipe learns from the result before the limits may move its steps to the artifact store; the
kept session judges the result last, as it will be recorded. A crawl's page sets its data (extract mode)
before the limits measure it. Incremental runs come after the recipe (a replay asks no model: nothing
to reuse) and keep a page's read after the crawl judged its answer (a 429 is no read), before the
limits may move the data to the artifact store. A crawl's page settles before the costs, so its
follow call (a model scoring its links) is priced in the page's ``cost_usd``.
"""

from workers.pipeline.feature import Feature
from workers.pipeline.features.artifacts import Artifacts
from workers.pipeline.features.costs import Costs
from workers.pipeline.features.crawls import Crawls
from workers.pipeline.features.first_command import FirstCommand
from workers.pipeline.features.incremental import IncrementalRuns
from workers.pipeline.features.human import HumanHelp
from workers.pipeline.features.input_files import InputFiles
from workers.pipeline.features.kept_sessions import KeptSessions
from workers.pipeline.features.limits import ResultLimits
from workers.pipeline.features.live_view import LiveViews
from workers.pipeline.features.politeness import Politeness
from workers.pipeline.features.profiles import AuthProfiles
from workers.pipeline.features.proxy_pools import ProxyPools
from workers.pipeline.features.recipes import RecipeReplay
from workers.pipeline.features.secrets import JobSecrets
from workers.pipeline.features.takeover import Takeovers

FEATURES: tuple[type[Feature], ...] = (
    JobSecrets,  # prepare: the values the job may type (its own, its credential set's)
    AuthProfiles,  # prepare: the storage state it starts from, where its end state goes
    RecipeReplay,  # prepare: the recipe it replays; settle: what the run teaches the recipe
    Politeness,  # hold: the slot on its site; attach: the gate its navigations ask
    ProxyPools,  # prepare: its proxy of a pool; attach: the pool hears its pages' answers (after politeness' gate)
    Artifacts,  # prepare: its folder in the artifact store
    InputFiles,  # prepare: the files it may upload (sent with it, or another job's artifacts of its tenant)
    Crawls,  # prepare: a recipe replayed on the crawl's page; settle: the page queues the pages it found (before
             # Costs: the follow model's calls are the page's)
    Costs,  # prepare: each LLM call priced, max_cost_usd; settle: cost_usd, budget_exceeded
    FirstCommand,  # attach: when its tab sends its first command
    HumanHelp,  # prepare: a job that may ask a human (request_human, pushed inputs) reaches its record
    LiveViews,  # during: the screencast while someone watches (faster while someone controls it)
    Takeovers,  # during: an operator's input events replayed on the tab while they control it
    IncrementalRuns,  # prepare: a scheduled page's last read; settle: this run's read, kept for the next
    ResultLimits,  # settle: the result's size limit, large results offloaded
    KeptSessions,  # settle/after: the session kept for follow-ups
)

__all__ = ["FEATURES"]
