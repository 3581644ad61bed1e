"""Reading a Prometheus exposition the way Prometheus would: with prometheus-client's parser."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """Every sample, keyed by (name, sorted labels)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return parse(reply.read().decode())
