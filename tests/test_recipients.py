"""Recipient rules: parsing, the typo guard and its notes."""

from __future__ import annotations

from typing import cast

import pytest

from mailslot.core.config import Config
from mailslot.core.errors import InvalidInput
from mailslot.service.recipients import check_new, parse, roster_for
from mailslot.store import Store


def test_parse_splits_lowercases_and_dedupes() -> None:
    assert parse(["Gemini, codex", "gemini"]) == ["gemini", "codex"]
    assert parse("claude") == ["claude"]
    for bad in ("all", "ALL", "", [], "a/b"):
        with pytest.raises(InvalidInput):
            parse(bad)
    with pytest.raises(InvalidInput, match="broadcast"):
        parse("gemini,all")


def test_a_near_miss_is_refused_and_a_new_name_noted() -> None:
    roster = ["codex", "gemini", "sarah"]
    with pytest.raises(InvalidInput, match="did you mean gemini\\?"):
        check_new(["gemnii"], roster, "claude", allow_new=False)
    assert check_new(["gemnii"], roster, "claude", allow_new=True) == [
        "gemnii had no mailbox; a new one was made"]
    assert check_new(["reviewer"], roster, "claude", allow_new=False) == [
        "reviewer had no mailbox; a new one was made"]
    assert check_new(["gemini", "claude"], roster, "claude", allow_new=False) == []


class _Mailboxes:
    """A store that has these mailboxes, and counts how often it was asked for them."""

    def __init__(self, *names: str) -> None:
        self.names, self.listed = list(names), 0

    def agent_names(self) -> list[str]:
        self.listed += 1
        return self.names


def test_a_send_to_configured_agents_lists_no_mailboxes() -> None:
    """Listing every mailbox reads the database's whole roster; a recipient the config
    names (every agent woken on mail is one) is known without it."""
    store = _Mailboxes("codex", "gemini")
    config = Config({"owner": "sarah", "agents": {"gemini": {}}})
    roster = roster_for(cast(Store, store), config, ["gemini", "sarah", "claude"], "claude")
    assert check_new(["gemini", "sarah", "claude"], roster, "claude", allow_new=False) == []
    assert store.listed == 0


def test_a_name_the_config_lacks_is_checked_against_every_mailbox() -> None:
    store = _Mailboxes("codex", "gemini")
    config = Config({"agents": {"reviewer": {}}})
    roster = roster_for(cast(Store, store), config, ["reviewer", "gemnii"], "claude")
    assert roster == ["codex", "gemini", "reviewer"] and store.listed == 1
    with pytest.raises(InvalidInput, match="did you mean gemini\\?"):
        check_new(["reviewer", "gemnii"], roster, "claude", allow_new=False)
