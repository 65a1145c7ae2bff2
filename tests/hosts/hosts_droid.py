"""Factory's Droid in the real-host harness: how it is pointed at the scripted provider,
how the person's approval of mailslot's tools is recorded after ``mailslot install
droid``, and how it runs headless. Registered in :data:`harness.HOSTS` on import.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .harness import API_KEY, HOSTS, Host, World, merge_json

MODEL = "fake-model"
"""A custom model's id. Droid answers an OpenAI-looking id (``gpt-4.1``) on the chat
completions API with a note to the model that it should use the Responses API."""




def identity(entry: dict[str, Any]) -> str:
    """Droid's fingerprint of a stdio server: a permission holds only while it matches.

    The first 32 hex digits of the SHA-256 of ``{"type","command","args"}`` as compact
    JSON; a changed command or argument list asks again.
    """
    key = {"type": "stdio", "command": entry["command"], "args": entry.get("args", [])}
    return hashlib.sha256(json.dumps(key, separators=(",", ":")).encode()).hexdigest()[:32]


def installed_entry(w: World) -> dict[str, Any] | None:
    """mailslot's entry as ``install droid`` wrote it (the project's wins), if any."""
    for path in (w.project / ".factory" / "mcp.json", w.home / ".factory" / "mcp.json"):
        if path.exists():
            entry = json.loads(path.read_text(encoding="utf-8")).get("mcpServers", {}) \
                .get("mailslot")
            if entry is not None:
                return dict(entry)
    return None


def approve(w: World) -> None:
    """What the person does after ``install droid``: "Always allow all mailslot tools".

    The TUI records it as ``persistentPermissions`` in the user ``mcp.json`` (whichever
    scope defines the server), keyed by the server's identity; that is what lets
    ``droid exec`` call the tools without ``--auto high`` or ``--skip-permissions-unsafe``
    (test_droid.py checks that the TUI records exactly this).
    """
    entry = installed_entry(w)
    if entry is None:
        return
    merge_json(w.home / ".factory" / "mcp.json", {"persistentPermissions": {"servers": {
        "mailslot": {"approvedAt": "2026-12-01T00:00:00.000Z", "impactLevel": "high",
                     "serverIdentity": identity(entry)}}}})


def _prepare(w: World) -> None:
    # A BYOK custom model on the provider (a resumed session keeps its model: a wake
    # passes no -m); MCP servers up before the first request (headless Droid starts the
    # turn without them otherwise); nothing mirrored to the cloud.
    merge_json(w.home / ".factory" / "settings.json", {
        "customModels": [{"model": MODEL, "displayName": "fake", "provider":
                          "generic-chat-completion-api", "baseUrl": f"{w.provider.url}/v1",
                          "apiKey": API_KEY, "maxOutputTokens": 4096}],
        "blockOnMcpLoad": True, "cloudSessionSync": False,
    })


def _env(w: World) -> dict[str, str]:
    # Factory's own service (feature flags, telemetry, the session lookup of `exec -s`)
    # on loopback too, answering 404: the whole run stays on 127.0.0.1.
    nothing = f"{w.provider.url}/404"
    return {"FACTORY_API_BASE_URL": nothing, "FACTORY_TELEMETRY_INGEST_BASE_URL": nothing,
            "FACTORY_DROID_AUTO_UPDATE_ENABLED": "false"}


HOSTS.update({h.name: h for h in (
    Host("droid", _prepare,
         lambda w, prompt: ["droid", "exec", "-o", "json", "-m", f"custom:{MODEL}", prompt],
         _env, approve),
)})
