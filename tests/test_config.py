"""config.json as the service reads it: where the mailbox is, and values that fail closed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mailslot.config import Config
from mailslot.errors import InvalidInput, StoreError
from mailslot.store import open_store, store_location
from mailslot.text import DEFAULT_MAX_BODY_BYTES


def test_root_order_is_flag_then_env_then_home() -> None:
    env = {"MAILSLOT_DIR": "/from/env"}
    assert store_location("/from/flag", env) == "/from/flag"
    assert store_location(None, env) == "/from/env"
    assert store_location(None, {}) == str(Path("~/mailslot").expanduser())
    assert store_location(None, {"MAILSLOT_DIR": ""}) == str(Path("~/mailslot").expanduser())


def test_an_unknown_store_scheme_is_one_clear_line() -> None:
    with pytest.raises(InvalidInput, match="postgresql:// stores are not supported"):
        open_store("postgresql://db/mail", {})


def test_defaults_for_an_empty_config() -> None:
    config = Config({})
    assert config.owner is None and config.agents() == {} and config.problems() == []
    assert config.max_body_bytes == DEFAULT_MAX_BODY_BYTES == 1024 * 1024


def test_owner_and_agents_are_names() -> None:
    config = Config({"owner": "Sarah", "agents": {"Gemini": {"wake_on_mail": True}}})
    assert config.owner == "sarah"
    assert config.agents() == {"gemini": {"wake_on_mail": True}}
    assert config.agent("gemini") == {"wake_on_mail": True} and config.agent("x") == {}


@pytest.mark.parametrize(
    ("raw", "read", "why"),
    [
        ({"owner": "all"}, "owner", "owner 'all' is reserved"),
        ({"owner": 5}, "owner", "owner is empty"),
        ({"max_body_bytes": 0}, "max_body_bytes", "positive whole number"),
        ({"max_body_bytes": True}, "max_body_bytes", "positive whole number"),
        ({"max_body_bytes": 1.5}, "max_body_bytes", "positive whole number"),
        ({"agents": []}, "agents", "agents must be an object"),
        ({"agents": {"../x": {}}}, "agents", "agents key"),
        ({"agents": {"codex": "yes"}}, "agents", "agents.codex must be an object"),
    ],
)
def test_malformed_values_fail_closed_naming_the_field(raw: dict[str, object], read: str,
                                                       why: str) -> None:
    config = Config(raw)
    with pytest.raises(StoreError, match=why):
        value = getattr(config, read)
        if callable(value):
            value()
    assert len(config.problems()) == 1 and "config.json" in config.problems()[0]


def test_unknown_keys_are_kept() -> None:
    assert Config({"theirs": {"a": 1}}).raw == {"theirs": {"a": 1}}


def test_require_credentials_fails_closed_and_doctor_names_it() -> None:  # issue 12
    from mailslot.config import Config
    from mailslot.errors import StoreError

    assert Config({}).require_credentials is False
    assert Config({"require_credentials": True}).require_credentials is True
    with pytest.raises(StoreError, match="require_credentials"):
        _ = Config({"require_credentials": "yes"}).require_credentials
    assert any("require_credentials" in p
               for p in Config({"require_credentials": 1}).problems())
