"""The demo batch: one job per product page of the demo shop.

Without an LLM the jobs are scripts (open the page, read name, price and stock by CSS selector);
with one they are agent tasks that start at the catalogue and must find the product themselves.
"""

from __future__ import annotations

from typing import Any

from daemon.demo.site import PRODUCTS, DemoSite
from workers.jobs.model.spec import JobSpec

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "price": {"type": "string"}, "stock": {"type": "string"}},
    "required": ["name", "price"],
}

FIELDS = {"name": "h1.name", "price": "p.price", "stock": "p.stock"}


def script_jobs(site: DemoSite) -> list[JobSpec]:
    return [
        JobSpec(
            script=[
                {"go_to_url": {"url": site.url(f"/product/{p.slug}")}},
                {"extract_fields": {"fields": FIELDS}},
                {"done": {"text": f"read {p.name}"}},
            ],
            allowed_networks=[site.network],
            labels={"demo": "shop", "product": p.slug},
        )
        for p in PRODUCTS
    ]


def agent_jobs(site: DemoSite) -> list[JobSpec]:
    return [
        JobSpec(
            task=f"Find the product '{p.name}' in this shop and report its name, price and stock status.",
            start_url=site.url("/catalogue"),  # type: ignore[arg-type]
            output_schema=OUTPUT_SCHEMA,
            allowed_domains=["127.0.0.1"],
            allowed_networks=[site.network],
            labels={"demo": "shop", "product": p.slug},
        )
        for p in PRODUCTS
    ]
