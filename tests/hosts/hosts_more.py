"""The hosts H9b adds to the harness (Qwen Code, OpenCode, Cline CLI, Pi): how each is pointed at
the scripted provider and run headless, registered in :data:`harness.HOSTS` on import.

Kept beside harness.py rather than in it so the two can change independently; the
shape is the harness's own :class:`harness.Host`.
"""

from __future__ import annotations

import subprocess

from .harness import API_KEY, HOSTS, Host, World, merge_json

MODEL = "gpt-4.1"




def _qwen_prepare(w: World) -> None:
    # OpenAI-compatible provider; MCP tools offered up front (not behind tool_search),
    # and the one tool the model calls allowed without a bypass flag.
    merge_json(w.home / ".qwen" / "settings.json", {
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"name": MODEL},
        "tools": {"exclude": ["tool_search"],
                  "allowed": ["mcp__mailslot__send_message"]},
    })


def _qwen_approve(w: World) -> None:
    """Approve a project's server as the person does (``qwen mcp approve``): Qwen Code
    0.24 connects a workspace ``.qwen/settings.json`` server only once approved (bound to
    a hash of its entry, in ``~/.qwen/mcpApprovals.json``), and ``install`` writes none."""
    if (w.project / ".qwen" / "settings.json").exists():
        done = w.program("qwen", "mcp", "approve", "mailslot")
        assert done.returncode == 0 and "Approved" in done.stdout, done.stdout + done.stderr


def _opencode_prepare(w: World) -> None:
    # An OpenAI-compatible provider on loopback, the way OpenCode documents local models.
    merge_json(w.home / ".config" / "opencode" / "opencode.json", {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "fake",
                              "options": {"baseURL": f"{w.provider.url}/v1",
                                          "apiKey": API_KEY},
                              "models": {MODEL: {"name": MODEL}}}},
        "model": f"fake/{MODEL}",
        "autoupdate": False, "share": "disabled",
    })


def _cline_prepare(w: World) -> None:
    # Cline's own command writes its provider settings (an OpenAI-compatible endpoint).
    subprocess.run(["cline", "auth", "--provider", "openai", "--apikey", API_KEY,
                    "--modelid", MODEL, "--baseurl", f"{w.provider.url}/v1"],
                   cwd=w.project, env=w.env, capture_output=True, timeout=60, check=True)


def _pi_prepare(w: World) -> None:
    # A custom OpenAI-compatible provider, the way Pi documents local models.
    merge_json(w.home / ".pi" / "agent" / "models.json", {"providers": {"fake": {
        "baseUrl": f"{w.provider.url}/v1", "api": "openai-completions", "apiKey": API_KEY,
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": MODEL}]}}})


HOSTS.update({h.name: h for h in (
    Host("qwen", _qwen_prepare,
         lambda w, prompt: ["qwen", "-p", prompt],
         lambda w: {"OPENAI_BASE_URL": f"{w.provider.url}/v1", "OPENAI_API_KEY": API_KEY,
                    "OPENAI_MODEL": MODEL}, _qwen_approve),
    Host("opencode", _opencode_prepare,
         lambda w, prompt: ["opencode", "run", prompt]),
    Host("pi", _pi_prepare,
         lambda w, prompt: ["pi", "--provider", "fake", "--model", MODEL, "-p", prompt]),
    Host("cline", _cline_prepare,
         lambda w, prompt: ["cline", "--json", prompt]),
)})
