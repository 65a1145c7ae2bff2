"""The server's ``tools/list``, as a client sees it, against a checked-in snapshot.

A tool's name, description, schemas and annotations are an API a model reads: a change
to any of them must show as a reviewed diff of ``tests/snapshots/list_tools.json``, never
slip in with a refactoring. Regeneration is explicit (``MAILSLOT_UPDATE_SNAPSHOT=1``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mailslot import Mailbox
from mailslot.frontends.mcp.server import build_server

pytestmark = pytest.mark.anyio
SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "list_tools.json"
REGENERATE = "MAILSLOT_UPDATE_SNAPSHOT=1 pytest tests/test_mcp_tools_snapshot.py"


def dumped(listing: Any) -> str:
    """The listing as stable text: what the wire carries, keys sorted, two-space indent.

    Without ``_meta``: the 2026 protocol puts the server's name and version there, which
    is no tool's API and changes at every release; the rest is the same in both modes.
    """
    data = listing.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("_meta", None)
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_list_matches_the_snapshot(box: Callable[[str | None], Mailbox],
                                               mode: str) -> None:
    async with Client(build_server(lambda: box("claude")), mode=mode) as client:
        live = dumped(await client.list_tools())
    if os.environ.get("MAILSLOT_UPDATE_SNAPSHOT") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(live, encoding="utf-8")
    assert SNAPSHOT.exists(), f"no snapshot of tools/list yet; write it with: {REGENERATE}"
    kept = SNAPSHOT.read_text(encoding="utf-8")
    assert live == kept, (
        f"tools/list ({mode} protocol) differs from {SNAPSHOT.name}: a tool's name, "
        "description, schema or annotations changed. If the change is meant, regenerate "
        f"the snapshot with `{REGENERATE}` and review its diff.")
