"""Wake settings edited from a form (``mailslot.settings``): checked like ``watch
--validate``, other keys kept, a concurrent edit never overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from mailslot import FileStore
from mailslot.errors import InvalidInput
from mailslot.settings import save_wake, version, wake_form, wake_forms

BASE = {"owner": "sarah", "custom": [1, 2],
        "agents": {"gemini": {"wake_on_mail": False, "extra": "kept",
                              "blocked_models": ["*opus*"], "default_model": "m"}}}


@pytest.fixture
def store(root: Path) -> FileStore:
    store = FileStore(root)
    store.save_config(BASE)
    return store


def test_a_save_writes_the_managed_keys_and_keeps_every_other(store: FileStore) -> None:
    form = wake_form(store, "gemini")
    assert form.hand_edited == {"blocked_models": '["*opus*"]', "default_model": "m"}
    result = save_wake(store, "gemini", form.version, "true", "command",
                       {"command.command": '["notify", "{id}"]', "command.cwd": "",
                        "blocked_models": "[]", "tmux.tmux_target": "ignored"})
    assert result.saved and not result.problems and not result.conflict
    saved = store.load_config()
    assert saved["agents"]["gemini"] == {
        "wake_on_mail": True, "wake_method": "command", "command": ["notify", "{id}"],
        "extra": "kept", "blocked_models": ["*opus*"], "default_model": "m"}
    assert saved["custom"] == [1, 2] and saved["owner"] == "sarah"
    assert result.current.version == version(saved["agents"]["gemini"])


def test_what_validate_rejects_is_not_saved(store: FileStore) -> None:
    form = wake_form(store, "gemini")
    for method, values, why in [
        ("command", {"command.command": "notify {id}"}, "JSON list"),
        ("command", {"command.command": "[]"}, "command"),
        ("tmux", {"tmux.tmux_target": "w:1", "tmux.tmux_program": "g",
                  "tmux.tmux_idle_seconds": "soon"}, "number"),
        ("tmux", {"tmux.tmux_program": "g"}, "tmux_target"),
    ]:
        result = save_wake(store, "gemini", form.version, "true", method, values)
        assert not result.saved and any(why in p for p in result.problems), result.problems
    assert store.load_config() == BASE
    with pytest.raises(InvalidInput):
        save_wake(store, "gemini", form.version, "always", "tmux", {})
    with pytest.raises(InvalidInput):
        save_wake(store, "gemini", form.version, "true", "carrier-pigeon", {})


def test_an_edit_made_meanwhile_is_a_conflict_and_is_kept(store: FileStore) -> None:
    form = wake_form(store, "gemini")
    store.update_config(lambda raw: raw["agents"]["gemini"].update(wake_on_mail="requested")
                        is None)
    result = save_wake(store, "gemini", form.version, "false", "", {})
    assert result.conflict and not result.saved
    assert store.load_config()["agents"]["gemini"]["wake_on_mail"] == "requested"
    assert result.current.opt_in == "requested"
    other = save_wake(store, "codex", version({}), "false", "", None)  # another agent: fine
    assert other.saved


def test_a_switch_keeps_the_method_fields(store: FileStore) -> None:
    first = save_wake(store, "gemini", wake_form(store, "gemini").version, "true", "tmux",
                      {"tmux.tmux_target": "w:1.0", "tmux.tmux_program": "gemini",
                       "tmux.tmux_busy_seconds": "30"})
    assert first.saved
    off = save_wake(store, "gemini", first.current.version, "false", "tmux", None)
    entry = store.load_config()["agents"]["gemini"]
    assert off.saved and entry["wake_on_mail"] is False
    assert (entry["tmux_target"], entry["tmux_busy_seconds"]) == ("w:1.0", 30)
    assert [f.agent for f in wake_forms(store, ["claude"])] == ["claude", "gemini"]
