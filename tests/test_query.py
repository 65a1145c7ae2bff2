"""The search query language: parsed into one tree, every mistake one clear line."""

from __future__ import annotations

import pytest

from mailslot.backends.files.search_index import fts
from mailslot.core.errors import InvalidInput
from mailslot.core.query import All, Any, Not, Term, parse, words_of


def test_words_phrases_prefixes_and_implied_and() -> None:
    assert parse("Deploy") == Term(("deploy",))
    assert parse('"database  Migration"') == Term(("database", "migration"))
    assert parse("migra*") == Term(("migra",), prefix=True)
    assert parse("deploy friday") == All((Term(("deploy",)), Term(("friday",))))
    assert parse("foo-bar") == Term(("foo", "bar"))  # a hyphenated word is a phrase


def test_boolean_operators_and_groups() -> None:
    assert parse("a OR b c") == Any((Term(("a",)), All((Term(("b",)), Term(("c",))))))
    assert parse("(a OR b) c") == All((Any((Term(("a",)), Term(("b",)))), Term(("c",))))
    assert parse("a AND NOT b") == All((Term(("a",)), Not(Term(("b",)))))
    assert parse("a -b") == parse("a NOT b")
    assert parse("a and or") == All((Term(("a",)), Term(("and",)), Term(("or",))))


@pytest.mark.parametrize(("query", "why"), [
    ("", "no word"), ("  ", "no word"), ("!!!", "no word"),
    ('"open phrase', "not closed"), ("(a OR b", "not closed"), ("a)", "unexpected"),
    ("OR a", "OR needs"), ("a OR", "OR needs"), ("a AND", "AND needs"), ("NOT", "NOT needs"),
    ("NOT a", "NOT needs a word"), ("-a", "NOT needs a word"), ("a OR -b", "NOT needs a word"),
    ("x" * 1001, "longer than"),
])
def test_bad_queries_are_one_clear_line(query: str, why: str) -> None:
    with pytest.raises(InvalidInput, match=why):
        parse(query)


def test_fts5_rendering_quotes_every_word() -> None:
    assert fts(parse('near subject:x "a b" c* -d')) == (
        '(("near" AND "subject x" AND "a b" AND "c"*) NOT "d")')
    assert fts(parse("a OR b")) == '("a" OR "b")'


def test_words_of_lowercases_letters_and_digits() -> None:
    assert words_of("Ünïcode v2, ok!") == ["ünïcode", "v2", "ok"]
