"""``mailslot install HOST --remote URL --credential FILE``: each host's own remote entry,
the secret in no file but its own."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from mailslot import FileStore, authority
from mailslot.credentials import read_credential

Cli = Callable[..., Result]
URL = "https://mail.example.org"


@pytest.fixture
def credential(root: Path, isolated: Path) -> str:
    return authority.register(FileStore(root), "ada", path=str(isolated / "ada.json")).path


def load(path: Path) -> dict[str, Any]:
    text = path.read_text()
    return tomllib.loads(text) if path.suffix == ".toml" else dict(json.loads(text))


@pytest.mark.parametrize(("host", "path", "entry"), [
    ("claude", ".mcp.json", {"type": "http", "url": f"{URL}/mcp",
                             "headers": {"Authorization": "Bearer ${MAILSLOT_SECRET}"}}),
    ("codex", ".codex/config.toml", {"url": f"{URL}/mcp",
                                     "bearer_token_env_var": "MAILSLOT_SECRET"}),
    ("gemini", ".gemini/settings.json", {
        "httpUrl": f"{URL}/mcp", "headers": {"Authorization": "Bearer ${MAILSLOT_SECRET}"}}),
    ("cursor", ".cursor/mcp.json", {
        "url": f"{URL}/mcp", "headers": {"Authorization": "Bearer ${env:MAILSLOT_SECRET}"}}),
])
def test_each_hosts_remote_entry(cli: Cli, isolated: Path, credential: str, host: str,
                                 path: str, entry: dict[str, Any]) -> None:
    work = isolated / "work"
    done = cli("install", host, "--remote", URL, "--credential", credential, "--hooks")
    assert done.code == 0, done.err
    doc = load(work / path)
    servers = doc.get("mcpServers") or doc["mcp_servers"]
    assert servers["mailslot"] == entry
    secret = read_credential(credential).secret
    written = [p for p in work.rglob("*") if p.is_file()]
    assert written and all(secret not in p.read_text() for p in written)
    hooks = "\n".join(p.read_text() for p in written if "hook" in p.name or "settings" in p.name)
    assert f"--remote {URL} --credential {credential}" in hooks
    assert "--agent" not in hooks


def test_a_local_entry_becomes_remote_whole(cli: Cli, isolated: Path, credential: str) -> None:
    assert cli("install", "claude", "--agent", "ada").code == 0
    assert cli("install", "claude", "--remote", URL, "--credential", credential).code == 0
    entry = load(isolated / "work" / ".mcp.json")["mcpServers"]["mailslot"]
    assert "command" not in entry and "args" not in entry and entry["type"] == "http"


def test_refusals(cli: Cli, credential: str) -> None:
    for argv, why in (
        (["copilot", "--remote", URL, "--credential", credential], "not offered"),
        (["claude", "--remote", URL], "needs --credential"),
        (["claude", "--remote", "mail.example.org", "--credential", credential], "http"),
        (["claude", "--remote", URL, "--credential", credential, "--hooks", "--wake"],
         "not with --remote"),
    ):
        done = cli("install", *argv)
        assert done.code == 2 and why in done.err, done.err
