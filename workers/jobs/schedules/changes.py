"""What changed from one run of a schedule to the next: items added, changed (field by field) and
removed, and pages that appeared or disappeared. Pure: the store (``change_store``) feeds it pages.

An **item** is what a page's data holds, keyed:

* by the output schema's ``x-key``: the schema (or a schema inside it, an array's ``items`` or an
  object's property) that names a field with ``"x-key": "sku"`` makes every object at that place in
  the data one item, keyed by its ``sku`` (an object without it is not tracked);
* else by the page's URL: the page's whole data is one item (a crawl's pages, extract mode included).

A page that failed this run says nothing about its items: they are carried over from the last run
that read them, not reported removed (the page is listed in ``pages_failed``). A page visited last
time and not this time (a crawl no longer found it) is in ``pages_removed``, its items ``removed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

KEY_FIELD = "x-key"  # the schema keyword naming an item's key field
MAX_LISTED = 1000  # items (and pages) listed per kind in one run's changes; the counts stay exact
WHOLE = "value"  # the field name of a change to an item that is not an object


@dataclass(frozen=True)
class PageData:
    """One page (or job) of a run: where it was, whether it succeeded, its data and its schema."""

    page: str  # the page's URL, else ``job {n}`` (a batch job with no start URL)
    ok: bool
    data: Any
    schema: dict[str, Any] | None


@dataclass(frozen=True)
class Keyed:
    """One item of a page's data, and its key."""

    key: str
    item: Any


class FieldChange(BaseModel):
    before: Any = None
    after: Any = None


class ItemChange(BaseModel):
    key: str
    page: str | None = Field(None, description="The page (URL) the item was read on.")
    item: Any = Field(None, description="The item (added: as it is now; removed: as it was).")
    fields: dict[str, FieldChange] = Field(default_factory=dict, description="Changed: each field that differs.")


class ChangeCounts(BaseModel):
    added: int = 0
    changed: int = 0
    removed: int = 0
    pages_added: int = 0
    pages_removed: int = 0
    pages_failed: int = 0


class RunChanges(BaseModel):
    """One run compared with the one before it (``GET /v1/schedules/{id}/changes``)."""

    schedule_id: str
    run: str = Field(description="The run's batch id.")
    previous_run: str | None = Field(None, description="The run it was compared with; null for the first run "
                                     "(the baseline: nothing is reported changed).")
    at: datetime
    counts: ChangeCounts = Field(default_factory=ChangeCounts)
    added: list[ItemChange] = Field(default_factory=list)
    changed: list[ItemChange] = Field(default_factory=list)
    removed: list[ItemChange] = Field(default_factory=list)
    pages_added: list[str] = Field(default_factory=list)
    pages_removed: list[str] = Field(default_factory=list, description="Pages of the previous run this run did "
                                     "not visit (no longer found).")
    pages_failed: list[str] = Field(default_factory=list, description="Pages whose visit failed this run: their "
                                    "items are kept as they were, not reported removed.")
    truncated: bool = Field(False, description=f"More than {MAX_LISTED} of a kind: the lists are cut, not the counts.")

    @property
    def anything(self) -> bool:
        c = self.counts
        return bool(c.added or c.changed or c.removed or c.pages_added or c.pages_removed)


class SnapItem(BaseModel):
    page: str
    item: Any


class Snapshot(BaseModel):
    """What a run read, kept until the next run is compared with it."""

    run: str
    items: dict[str, SnapItem] = Field(default_factory=dict)
    pages: list[str] = Field(default_factory=list, description="Pages visited (succeeded or failed).")


def declares_key(schema: Any) -> bool:
    """Whether ``schema`` (or a schema inside it) names an item key with ``x-key``."""
    if not isinstance(schema, dict):
        return False
    if isinstance(schema.get(KEY_FIELD), str):
        return True
    props = schema.get("properties")
    inner = list(props.values()) if isinstance(props, dict) else []
    return any(declares_key(s) for s in [*inner, schema.get("items")])


def keyed_items(schema: Any, data: Any) -> list[Keyed]:
    """The items ``data`` holds where ``schema`` declares them, with their keys."""
    if not isinstance(schema, dict):
        return []
    key = schema.get(KEY_FIELD)
    if isinstance(key, str):
        value = data.get(key) if isinstance(data, dict) else None
        return [Keyed(str(value), data)] if isinstance(value, (str, int, float)) and not isinstance(value, bool) else []
    out: list[Keyed] = []
    if isinstance(data, list):
        for element in data:
            out += keyed_items(schema.get("items"), element)
    props = schema.get("properties")
    if isinstance(data, dict) and isinstance(props, dict):
        for name, inner in props.items():
            out += keyed_items(inner, data.get(name))
    return out


def items_of(page: PageData) -> list[Keyed]:
    """A succeeded page's items: by the schema's x-key, else the page's data as one item keyed by its URL."""
    if declares_key(page.schema):
        return keyed_items(page.schema, page.data)
    return [Keyed(page.page, page.data)]


def field_changes(before: Any, after: Any) -> dict[str, FieldChange]:
    """The fields that differ between two versions of an item (the item itself when not an object)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return {name: FieldChange(before=before.get(name), after=after.get(name))
                for name in dict.fromkeys([*before, *after]) if before.get(name) != after.get(name)}
    return {} if before == after else {WHOLE: FieldChange(before=before, after=after)}


@dataclass(frozen=True)
class Compared:
    changes: RunChanges
    snapshot: Snapshot


def compare(previous: Snapshot | None, pages: list[PageData], schedule_id: str, run: str, at: datetime) -> Compared:
    """This run's pages against the previous run's snapshot: what changed, and the next snapshot."""
    failed = [p.page for p in pages if not p.ok]
    visited = list(dict.fromkeys(p.page for p in pages))
    items: dict[str, SnapItem] = {}
    for page in pages:
        if page.ok:
            for found in items_of(page):
                items[found.key] = SnapItem(page=page.page, item=found.item)
    changes = RunChanges(schedule_id=schedule_id, run=run, at=at)
    if previous is not None:
        changes.previous_run = previous.run
        gone_pages = set(previous.pages) - set(visited)
        failed_set = set(failed)
        for key, old in previous.items.items():  # a failed page's items stand as they were
            if key not in items and old.page in failed_set:
                items[key] = old
        added = [ItemChange(key=k, page=v.page, item=v.item) for k, v in items.items() if k not in previous.items]
        removed = [ItemChange(key=k, page=v.page, item=v.item) for k, v in previous.items.items() if k not in items]
        changed = []
        for key, now in items.items():
            old = previous.items.get(key)
            if old is not None:
                diff = field_changes(old.item, now.item)
                if diff:
                    changed.append(ItemChange(key=key, page=now.page, fields=diff))
        new_pages = [p for p in visited if p not in set(previous.pages)]
        lost_pages = [p for p in previous.pages if p in gone_pages]
        changes.counts = ChangeCounts(added=len(added), changed=len(changed), removed=len(removed),
                                      pages_added=len(new_pages), pages_removed=len(lost_pages),
                                      pages_failed=len(failed))
        changes.truncated = any(len(x) > MAX_LISTED for x in (added, changed, removed, new_pages, lost_pages, failed))
        changes.added, changes.changed, changes.removed = added[:MAX_LISTED], changed[:MAX_LISTED], removed[:MAX_LISTED]
        changes.pages_added, changes.pages_removed = new_pages[:MAX_LISTED], lost_pages[:MAX_LISTED]
        changes.pages_failed = failed[:MAX_LISTED]
    else:
        changes.counts = ChangeCounts(pages_failed=len(failed))
        changes.pages_failed = failed[:MAX_LISTED]
    return Compared(changes, Snapshot(run=run, items=items, pages=visited))
