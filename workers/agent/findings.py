"""What a job found, kept outside the trimmed history: every extraction, every cached note.

Extractions accumulate (a list per goal) and are merged into the output schema at the end, so a
paginated crawl keeps every page. Cached findings (``cache_content``) and a short line per
extraction form the memory section of the history, which is never trimmed away.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from workers.agent.merge import merge

NOTE_CHARS = 2000  # an extraction's text as the models see it in memory (schema-less jobs)
DATA_NOTE_CHARS = 300  # the same for schema jobs: their data is kept here, the note only says what it was


@dataclass(frozen=True)
class Extraction:
    goal: str
    url: str
    value: Any  # a value of the job's schema, or the text found (schema-less jobs)


@dataclass
class Findings:
    extractions: list[Extraction] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the memory section, oldest first

    def __bool__(self) -> bool:
        return bool(self.extractions or self.cached)

    def cache(self, content: str) -> None:
        self.cached.append(content)
        self.notes.append(f"cached: {content}")

    def extracted(self, goal: str, url: str, values: list[Any], *, structured: bool) -> None:
        """Keep one extraction (one value per chunk of the page) and note it in memory."""
        for value in values:
            self.extractions.append(Extraction(goal, url, value))
        shown = values[0] if len(values) == 1 else values
        self.notes.append(f"extracted {goal!r} from {url}: {short(shown, DATA_NOTE_CHARS if structured else NOTE_CHARS)}")

    def by_goal(self) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for e in self.extractions:
            grouped.setdefault(e.goal, []).append({"url": e.url, "content": e.value})
        return grouped

    def data(self, base: Any, schema: dict[str, Any] | None) -> Any:
        """The job's data: ``base`` (read by extract_fields) with every extraction merged in.

        With a schema, the values merged as the schema says; without one, the extractions per goal
        and the cached findings beside what ``base`` holds.
        """
        if not self:
            return base
        if schema is not None:
            return merge([base, *(e.value for e in self.extractions)], schema)
        found: dict[str, Any] = dict(base) if isinstance(base, dict) else ({} if base is None else {"content": base})
        if self.extractions:
            found["extracted"] = self.by_goal()
        if self.cached:
            found["cached"] = list(self.cached)
        return found

    def summary(self, schema: dict[str, Any] | None) -> str:
        """How much the data holds so far, for the model to count pages and items by."""
        if schema is None or not self.extractions:
            return ""
        merged = merge([e.value for e in self.extractions], schema)
        if isinstance(merged, list):
            return f"{len(merged)} items so far"
        if isinstance(merged, dict):
            counts = [f"{name}: {len(v)}" for name, v in merged.items() if isinstance(v, list)]
            return f"data so far: {', '.join(counts)}" if counts else ""
        return ""


def short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."
