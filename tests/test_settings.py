"""Wake settings edited from a form (``mailslot.service.settings``): checked like ``watch
--validate``, other keys kept, a concurrent edit never overwritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.core.errors import InvalidInput, Refused
from mailslot.service.settings import (
    change_gate,
    gate_views,
    save_wake,
    version,
    wake_form,
    wake_forms,
)
from mailslot.wake.report import validate
from support import put_config

BASE = {"owner": "sarah", "custom": [1, 2],
        "agents": {"gemini": {"wake_on_mail": False, "extra": "kept",
                              "blocked_models": ["*opus*"], "default_model": "m"}}}


@pytest.fixture
def store(root: Path) -> FileStore:
    store = FileStore(root)
    put_config(store, BASE)
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


def test_notifiers_are_saved_as_a_list_and_checked_like_validate(store: FileStore) -> None:
    form = wake_form(store, "gemini")
    assert form.notify == ""
    result = save_wake(store, "gemini", form.version, "false", "", {},
                       '[{"kind": "desktop", "subjects": true}, {"kind": "bank"}]')
    assert result.saved, result.problems
    entry = store.load_config()["agents"]["gemini"]
    assert entry["notify"] == [{"kind": "desktop", "subjects": True}, {"kind": "bank"}]
    assert entry["extra"] == "kept" and '"desktop"' in result.current.notify
    assert len(result.current.report.notify) >= 2  # what watch --validate says of them

    before = store.load_config()
    for text, why in [('{"kind": "desktop"}', "JSON list"), ("desktop", "JSON list"),
                      ('[{"kind": "pager"}]', "kind must be one of"),
                      ('[{"kind": "desktop", "subjects": "yes"}]', "true or false")]:
        refused = save_wake(store, "gemini", result.current.version, "false", "", {}, text)
        assert not refused.saved and any(why in p for p in refused.problems), refused.problems
        # the page refuses exactly what watch --validate reports
        if why != "JSON list":
            trial = dict(before, agents={**before["agents"], "gemini": {
                **before["agents"]["gemini"], "notify": json.loads(text)}})
            put_config(store, trial)
            assert any(why in p for a in validate(store).agents for p in a.problems)
            put_config(store, before)
    assert store.load_config() == before

    kept = save_wake(store, "gemini", result.current.version, "false", "", None, None)
    assert kept.saved and store.load_config()["agents"]["gemini"]["notify"] == entry["notify"]
    cleared = save_wake(store, "gemini", kept.current.version, "false", "", {}, "  ")
    assert cleared.saved and "notify" not in store.load_config()["agents"]["gemini"]


def test_the_owner_manages_an_agents_gate_with_the_agents_own_code(
        store: FileStore) -> None:
    codex = Mailbox(store, Identity("codex", "--agent"))
    codex.send("gemini", "before the gate", "kept")
    change_gate(store, "gemini", "on")
    [view] = gate_views(store, ["gemini"])
    assert (view.accept, view.members, view.pending) == ("members", [], [])
    assert [i.message.subject for i in Mailbox(store, Identity("gemini", "--agent")).inbox()
            ] == ["before the gate"]  # what was there stays (the CLI's switch)
    with pytest.raises(Refused):
        codex.send("gemini", "after", "refused")
    codex.gate.join("gemini", "may I?")
    assert gate_views(store, ["gemini"])[0].pending == ["codex"]
    change_gate(store, "gemini", "admit", "codex")
    assert gate_views(store, ["gemini"])[0].members == ["codex"]
    codex.send("gemini", "after", "now it passes")
    assert any("admitted you" in i.message.subject for i in codex.inbox())
    change_gate(store, "gemini", "revoke", "codex")
    change_gate(store, "gemini", "revoke", "codex")  # twice: the same end state
    assert gate_views(store, ["gemini"])[0].members == []
    change_gate(store, "gemini", "off")
    assert gate_views(store, ["gemini"])[0].accept == "open"
    for action, name in [("join", "codex"), ("admit", " "), ("refuse", "claude"),
                         ("admit", "../x")]:
        with pytest.raises(InvalidInput):
            change_gate(store, "gemini", action, name)
    assert store.load_config() == BASE  # gates live beside config.json, not in it
