"""The file store and the hooks' lean view share one layout and one implementation."""

from __future__ import annotations

from pathlib import Path

import pytest

from mailslot.errors import StoreError
from mailslot.store import FileStore
from mailslot.store.delivery_files import DeliveryFiles
from support import make_message


def test_what_one_view_records_the_other_reads(root: Path) -> None:
    store, lean = FileStore(root), DeliveryFiles(str(root))
    m = make_message()
    store.deliver(m, ["gemini"])
    assert lean.entries("gemini", ["unread"]) == store.entries("gemini", ["unread"])
    lean.add_seen("gemini", ["a"])
    store.add_seen("gemini", ["b"])
    assert lean.seen("gemini") == store.seen("gemini") == {"a", "b"}
    lean.append_event({"event": "read", "id": m.id})
    assert list(store.events())[-1] == {"event": "read", "id": m.id}
    store.save_config({"owner": "sarah"})
    assert lean.load_config() == store.load_config() == {"owner": "sarah"}


def test_both_views_refuse_a_broken_config_in_the_same_words(root: Path) -> None:
    root.mkdir()
    (root / "config.json").write_text("{broken")
    errors = []
    for view in (FileStore(root), DeliveryFiles(str(root))):
        with pytest.raises(StoreError) as caught:
            view.load_config()
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "is not valid JSON" in errors[0]
