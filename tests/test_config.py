"""config.json as the service reads it: where the mailbox is, and values that fail closed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mailslot.backends import open_store, store_location
from mailslot.core.config import Config, this_machine
from mailslot.core.errors import InvalidInput, StoreError
from mailslot.core.text import DEFAULT_MAX_BODY_BYTES


def test_root_order_is_flag_then_env_then_home() -> None:
    env = {"MAILSLOT_DIR": "/from/env"}
    assert store_location("/from/flag", env) == "/from/flag"
    assert store_location(None, env) == "/from/env"
    url = "postgresql://db/mail"
    assert store_location(None, {**env, "MAILSLOT_STORE": url}) == url
    assert store_location("/from/flag", {"MAILSLOT_STORE": url}) == "/from/flag"


def test_a_child_is_told_a_folder_in_its_arguments_and_a_password_in_its_environment(
        tmp_path: Path) -> None:
    """What the watcher, its bridges and a service unit are handed: a folder by --dir
    (which outranks whatever MAILSLOT_STORE the child inherits), a database's whole
    address by MAILSLOT_STORE only, so its password is never in an argument."""
    from mailslot.backends import handed_over
    from mailslot.backends.postgres.pg_store import PostgresStore

    folder = open_store(str(tmp_path / "box"))
    assert handed_over(folder) == (["--dir", str(tmp_path / "box")],
                                   {"MAILSLOT_DIR": str(tmp_path / "box")})
    url = "postgresql://mailslot_owner:s3cret@db.example/mail"
    named, env = handed_over(PostgresStore(url))
    assert named == [] and env == {"MAILSLOT_STORE": url}


def test_the_machine_settings_file_comes_after_the_environment(tmp_path: Path) -> None:
    settings = tmp_path / "mailslot" / "store"
    settings.parent.mkdir()
    settings.write_text("postgresql://ann@db.example/mail\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    assert store_location(None, env) == "postgresql://ann@db.example/mail"
    assert store_location(None, {**env, "MAILSLOT_DIR": "/from/env"}) == "/from/env"
    assert store_location(None, {}) == str(Path("~/mailslot").expanduser())
    assert store_location(None, {"MAILSLOT_DIR": ""}) == str(Path("~/mailslot").expanduser())


def test_an_unknown_store_scheme_is_one_clear_line() -> None:
    with pytest.raises(InvalidInput, match="mysql:// stores are not supported"):
        open_store("mysql://db/mail", {})


def test_defaults_for_an_empty_config() -> None:
    config = Config({})
    assert config.owner is None and config.agents() == {} and config.problems() == []
    assert config.max_body_bytes == DEFAULT_MAX_BODY_BYTES == 1024 * 1024


def test_owner_and_agents_are_names() -> None:
    config = Config({"owner": "Sarah", "agents": {"Gemini": {"wake_on_mail": True}}})
    assert config.owner == "sarah"
    assert config.agents() == {"gemini": {"wake_on_mail": True}}
    assert config.agent("gemini") == {"wake_on_mail": True} and config.agent("x") == {}
    config.agents().pop("gemini")  # checked once, but each caller has its own copy
    assert config.agents() == {"gemini": {"wake_on_mail": True}}


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


@pytest.mark.parametrize(("value", "seconds"), [(None, 30.0), (0, 0.0), (2.5, 2.5)])
def test_midturn_interval_defaults_to_30_and_takes_any_number_from_0(
    value: object, seconds: float
) -> None:
    agent = {} if value is None else {"midturn_interval_seconds": value}
    assert Config({"agents": {"codex": agent}}).midturn_interval("codex") == seconds


@pytest.mark.parametrize("value", [-1, "30", True, None, [30]])
def test_malformed_midturn_interval_is_an_error_doctor_reports(value: object) -> None:
    config = Config({"agents": {"codex": {"midturn_interval_seconds": value}}})
    with pytest.raises(StoreError, match=r"agents\.codex\.midturn_interval_seconds"):
        config.midturn_interval("codex")
    assert config.problems() == [
        "config.json: agents.codex.midturn_interval_seconds must be a number of seconds, "
        "0 or more"]


def test_require_credentials_fails_closed_and_doctor_names_it() -> None:
    from mailslot.core.config import Config
    from mailslot.core.errors import StoreError

    assert Config({}).require_credentials is False
    assert Config({"require_credentials": True}).require_credentials is True
    with pytest.raises(StoreError, match="require_credentials"):
        _ = Config({"require_credentials": "yes"}).require_credentials
    assert any("require_credentials" in p
               for p in Config({"require_credentials": 1}).problems())


def test_an_agents_host_says_which_machine_wakes_it() -> None:
    config = Config({"agents": {"a": {"host": "laptop"}, "b": {}, "c": {"host": 3}}})
    assert config.wakes_on("a", "laptop") and not config.wakes_on("a", "vm")
    assert config.wakes_on("b", "vm")  # no host: any machine's watcher
    assert not config.wakes_on("c", "vm")  # not text: none (fails closed)
    assert this_machine({"MAILSLOT_HOST": "vm"}) == "vm"
    # without host, where it was last seen; a host set by hand wins over that
    assert config.wakes_on("b", "vm", "vm") and not config.wakes_on("b", "laptop", "vm")
    assert config.wakes_on("a", "laptop", "vm")
