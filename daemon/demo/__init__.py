"""The bundled demo: a small shop and the batch that scrapes it."""

from daemon.demo.jobs import agent_jobs, script_jobs
from daemon.demo.site import PRODUCTS, DemoSite

__all__ = ["PRODUCTS", "DemoSite", "agent_jobs", "script_jobs"]
