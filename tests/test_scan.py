"""Search without an index (the store's default, which the memory store uses) finds
what the file store's index finds, in the same order."""

from __future__ import annotations

from pathlib import Path

import pytest

from mailslot.backends import open_store
from mailslot.core.query import Search, parse
from mailslot.store import Store
from support import make_message

MESSAGES = [
    make_message(to=("gemini",), subject="Database migration plan",
                 body="We migrate on Friday. The migration window is short.", n=1),
    make_message(sender="codex", to=("gemini", "sarah"), subject="Lunch",
                 body="the migration of pizza to the big table", n=2),
    make_message(sender="gemini", to=("claude",), subject="Re: plan",
                 body="Friday is fine, deploy after lunch", n=3),
    make_message(sender="sarah", to=("all",), subject="Freeze", body="no deploys today", n=4),
    make_message(sender="claude", to=("codex",), subject="Deploy notes",
                 body="deploying deploys deployed", n=5),
]
QUERIES = ["migration", "migrat*", '"migration plan"', "friday NOT pizza", "deploy*",
           "lunch OR freeze", "(deploy OR migration) -pizza", "nothing", "plan", "the"]


def _filled(store: Store) -> Store:
    for m in MESSAGES:
        if m.is_broadcast:
            store.publish(m)
        else:
            store.deliver(m, list(m.to))
    return store


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("filters", [{}, {"reader": "gemini"}, {"reader": "gemini", "sent": True},
                                     {"sender": "codex"}, {"recipient": "sarah"},
                                     {"limit": 2, "offset": 1}])
def test_the_default_search_finds_what_the_index_finds(root: Path, query: str,
                                                       filters: dict[str, object]) -> None:
    indexed = _filled(open_store(str(root)))
    scanned = _filled(open_store(f"memory://scan-{query}-{sorted(filters.items())}"))
    request = Search(match=parse(query), **filters)  # type: ignore[arg-type]
    assert scanned.search(request) == indexed.search(request)


def test_without_words_oldest_first_and_a_thread_whole(root: Path) -> None:
    indexed = _filled(open_store(str(root)))
    scanned = _filled(open_store("memory://scan-plain"))
    for request in (Search(), Search(thread=MESSAGES[0].id), Search(since=MESSAGES[2].date),
                    Search(until=MESSAGES[2].date, reader="gemini")):
        assert scanned.search(request) == indexed.search(request)
    assert scanned.reindex() == len(MESSAGES)
