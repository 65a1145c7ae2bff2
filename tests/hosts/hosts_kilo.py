"""Kilo Code CLI in the harness: how it is pointed at the scripted provider and run
headless, registered in :data:`harness.HOSTS` on import.

Kilo Code CLI 7.x is a fork of OpenCode: one JSON config (``kilo.json``) holds the
provider, the MCP servers (``mcp``, OpenCode's shape; written by ``mailslot install
kilo``) and the tool permissions (``permission``, set here as the person would).
"""

from __future__ import annotations

from pathlib import Path

from .harness import API_KEY, HOSTS, Host, World, merge_json

MODEL = "gpt-4.1"




def user_config(w: World) -> Path:
    """Kilo's user config, ``~/.config/kilo/kilo.json``."""
    return w.home / ".config" / "kilo" / "kilo.json"


def _kilo_prepare(w: World) -> None:
    # An OpenAI-compatible provider on loopback (the SDK package is bundled: nothing is
    # fetched), and mailslot's tools allowed by the person's permission rule (what
    # `install kilo` tells them to add), not by --auto.
    merge_json(user_config(w), {
        "$schema": "https://app.kilo.ai/config.json",
        "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "fake",
                              "options": {"baseURL": f"{w.provider.url}/v1",
                                          "apiKey": API_KEY},
                              "models": {MODEL: {"name": MODEL}}}},
        "model": f"fake/{MODEL}",
        "permission": {"mailslot_*": "allow"},
        "autoupdate": False, "share": "disabled",
    })


HOSTS.update({h.name: h for h in (
    Host("kilo", _kilo_prepare,
         lambda w, prompt: ["kilo", "run", "--format", "json", prompt],
         # No models.dev fetch, no PostHog (its shutdown waits ~4 s offline), no update.
         lambda w: {"KILO_DISABLE_MODELS_FETCH": "1", "KILO_TELEMETRY_LEVEL": "off",
                    "KILO_DISABLE_AUTOUPDATE": "1"}),
)})
