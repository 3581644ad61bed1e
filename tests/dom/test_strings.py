"""The snapshot's strings are well formed: no lone surrogate leaves the dom package."""

from __future__ import annotations

from dom.tree import Strings, well_formed


def test_lone_surrogates_become_the_replacement_character():
    assert well_formed("deal \ud83d") == "deal \ufffd"
    assert well_formed("\ude00 tail") == "\ufffd tail"
    assert well_formed("intact \U0001F600 and naïve") == "intact \U0001F600 and naïve"
    assert well_formed("\ud83d\ude00") == "\U0001F600"  # a pair kept as two code points is one emoji


def test_the_string_table_is_mended_item_by_item():
    table = Strings(["plain", "half \ud83d", "\ude00 other half"])
    assert table.table == ["plain", "half \ufffd", "\ufffd other half"]  # halves in two strings stay apart
    assert all(t.encode("utf-8") for t in table.table)
    clean = ["a", "b é"]
    assert Strings(clean).table is clean  # nothing to mend: the table is kept as it is
