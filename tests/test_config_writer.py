"""The config has one writer, the store's locked ``update_config``: two changes to
different keys at once (here ``stop_wake`` for one agent while another process adds
another agent) both land, and no module outside the store saves the config another way."""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends.files.file_store import FileStore
from support import finish, wait_for, worker

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "mailslot"


class WatchedStore(FileStore):
    """A file store that says when a writer has read the config or asked for the lock,
    so the test knows the writer's read-modify-write has begun."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.begun = threading.Event()

    def load_config(self) -> dict[str, Any]:
        config = super().load_config()
        self.begun.set()
        return config

    def update_config(self, change: Callable[[dict[str, Any]], bool]) -> bool:
        self.begun.set()
        return super().update_config(change)


def test_stop_wake_beside_another_edit_loses_neither(tmp_path: Path) -> None:
    """A process holds an edit of the config open (it has read it and is about to save
    it); meanwhile ``stop_wake`` turns gemini's wake off. Once the edit is let go, both
    changes are in the config: the held edit added codex, and gemini is not woken."""
    root = tmp_path / "box"
    FileStore(str(root)).update_config(lambda c: c.update(agents={"gemini": {
        "wake_on_mail": True, "wake_method": "tmux", "tmux_target": "work:1.0"}}) is None)
    held, release = tmp_path / "held", tmp_path / "release"
    slow = worker("config", root, "codex", held, release)
    wait_for(held.exists, what="the other edit to have read the config")
    store = WatchedStore(str(root))
    box = Mailbox(store, Identity("gemini", "--agent"))
    changed: list[bool] = []
    thread = threading.Thread(target=lambda: changed.append(box.stop_wake("gemini", ["tmux"])))
    thread.start()
    # Once stop_wake has read the config (an unlocked writer) or waits for the lock (the
    # one writer), both edits are under way: neither has saved what it read.
    assert store.begun.wait(timeout=60), "stop_wake never began"
    release.touch()
    thread.join(timeout=60)
    assert not thread.is_alive()
    finish(slow)
    agents = FileStore(str(root)).load_config()["agents"]
    assert changed == [True]
    assert agents["gemini"]["wake_method"] == "unsupported"
    assert agents["gemini"]["wake_on_mail"] is False
    assert agents["gemini"]["tmux_target"] == "work:1.0"
    assert agents["codex"] == {"wake_on_mail": True}


def test_stop_wake_of_an_agent_not_woken_so_changes_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "box")
    FileStore(root).update_config(lambda c: c.update(
        owner="sarah", agents={"gemini": {"wake_method": "command"}}) is None)
    before = (Path(root) / "config.json").read_bytes()
    box = Mailbox(FileStore(root), Identity("gemini", "--agent"))
    assert box.stop_wake("gemini", ["tmux"]) is False
    assert box.stop_wake("codex", ["tmux"]) is False
    assert (Path(root) / "config.json").read_bytes() == before


def calls_outside_the_store(method: str) -> list[str]:
    """Where a module outside ``mailslot.store`` calls ``.method(...)``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == method):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_only_the_store_writes_the_config() -> None:
    """Every change outside the store is a ``change`` handed to ``update_config``: a
    replace-the-whole-config call there would be a read-modify-write without the lock."""
    assert calls_outside_the_store("update_config")  # the walk sees the writers
    assert calls_outside_the_store("save_config") == []
