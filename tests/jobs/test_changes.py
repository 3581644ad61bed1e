"""The change feed's comparison (workers.jobs.schedules.changes): items keyed by the schema's x-key,
else by page URL; added, changed field by field, removed; pages gone; a failed page's items kept."""

from __future__ import annotations

from datetime import UTC, datetime

from workers.jobs.schedules.changes import MAX_LISTED, FieldChange, Keyed, PageData, Snapshot, compare, keyed_items

AT = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
PRODUCTS = {"type": "object", "properties": {"products": {"type": "array", "items": {
    "type": "object", "x-key": "sku", "properties": {"sku": {"type": "string"}, "price": {"type": "number"}}}}}}


def shop(url: str, *products: tuple[str, float], ok: bool = True) -> PageData:
    return PageData(url, ok, {"products": [{"sku": sku, "price": price} for sku, price in products]}, PRODUCTS)


def run(previous: Snapshot | None, pages: list[PageData], name: str):  # noqa: ANN201
    return compare(previous, pages, "s" * 32, name, AT)


def test_the_first_run_is_the_baseline_and_reports_nothing_changed() -> None:
    first = run(None, [shop("http://shop/a", ("A1", 10.0), ("A2", 5.0))], "r1")
    assert first.changes.previous_run is None and not first.changes.anything
    assert set(first.snapshot.items) == {"A1", "A2"} and first.snapshot.pages == ["http://shop/a"]


def test_items_keyed_by_x_key_are_added_changed_field_by_field_and_removed() -> None:
    before = run(None, [shop("http://shop/a", ("A1", 10.0), ("A2", 5.0)), shop("http://shop/b", ("B1", 1.0))], "r1")
    after = run(before.snapshot, [shop("http://shop/a", ("A1", 12.5), ("A3", 7.0)), shop("http://shop/b", ("B1", 1.0))],
                "r2")
    c = after.changes
    assert c.previous_run == "r1" and c.anything
    assert [(i.key, i.item) for i in c.added] == [("A3", {"sku": "A3", "price": 7.0})]
    assert [(i.key, i.fields) for i in c.changed] == [("A1", {"price": FieldChange(before=10.0, after=12.5)})]
    assert [(i.key, i.page) for i in c.removed] == [("A2", "http://shop/a")]
    assert (c.counts.added, c.counts.changed, c.counts.removed, c.counts.pages_removed) == (1, 1, 1, 0)


def test_nothing_changed_is_an_entry_with_nothing_in_it() -> None:
    pages = [shop("http://shop/a", ("A1", 10.0))]
    again = run(run(None, pages, "r1").snapshot, pages, "r2")
    assert not again.changes.anything and again.changes.counts.model_dump() == dict.fromkeys(
        ("added", "changed", "removed", "pages_added", "pages_removed", "pages_failed"), 0)


def test_a_failed_page_keeps_its_items_and_a_page_not_visited_is_gone() -> None:
    before = run(None, [shop("http://shop/a", ("A1", 10.0)), shop("http://shop/b", ("B1", 1.0)),
                        shop("http://shop/c", ("C1", 3.0))], "r1")
    after = run(before.snapshot, [shop("http://shop/a", ok=False), shop("http://shop/b", ("B1", 1.0))], "r2")
    c = after.changes
    assert c.pages_failed == ["http://shop/a"] and c.pages_removed == ["http://shop/c"]
    assert [i.key for i in c.removed] == ["C1"], "the failed page's A1 is not reported removed"
    assert "A1" in after.snapshot.items, "and is kept for the next run's comparison"
    back = run(after.snapshot, [shop("http://shop/a", ("A1", 10.0)), shop("http://shop/b", ("B1", 1.0))], "r3")
    assert not back.changes.anything


def test_without_x_key_each_pages_data_is_one_item_keyed_by_its_url() -> None:
    def page(url: str, text: str) -> PageData:
        return PageData(url, True, {"markdown": text, "links": ["/"]}, None)

    before = run(None, [page("http://site/", "home"), page("http://site/old", "old")], "r1")
    after = run(before.snapshot, [page("http://site/", "home, revised"), page("http://site/new", "new")], "r2")
    c = after.changes
    assert [(i.key, i.fields) for i in c.changed] == [
        ("http://site/", {"markdown": FieldChange(before="home", after="home, revised")})]
    assert [i.key for i in c.added] == ["http://site/new"] and [i.key for i in c.removed] == ["http://site/old"]
    assert c.pages_added == ["http://site/new"] and c.pages_removed == ["http://site/old"]
    scalar = run(run(None, [PageData("job 0", True, "3 items", None)], "r1").snapshot,
                 [PageData("job 0", True, "4 items", None)], "r2")
    assert scalar.changes.changed[0].fields == {"value": FieldChange(before="3 items", after="4 items")}


def test_x_key_is_found_at_the_top_in_arrays_and_objects_and_items_without_a_key_are_not_tracked() -> None:
    one = {"type": "object", "x-key": "id"}
    assert keyed_items(one, {"id": 7, "name": "x"}) == [Keyed("7", {"id": 7, "name": "x"})]
    assert keyed_items({"type": "array", "items": one}, [{"id": "a"}, {"name": "no key"}, "junk", {"id": True}]) == [
        Keyed("a", {"id": "a"})]
    assert keyed_items(PRODUCTS, {"products": "not a list"}) == [] and keyed_items(PRODUCTS, None) == []


def test_lists_are_cut_but_the_counts_stay_exact() -> None:
    many = [PageData(f"http://site/{n}", True, {"n": n}, None) for n in range(MAX_LISTED + 5)]
    after = run(run(None, [], "r1").snapshot, many, "r2")
    assert after.changes.counts.added == MAX_LISTED + 5 and len(after.changes.added) == MAX_LISTED
    assert after.changes.truncated
