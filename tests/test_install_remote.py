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
from mailslot import FileStore
from mailslot.access import authority
from mailslot.access.credentials import read_credential

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
        (["claude", "--remote", "http://mail.example.org", "--credential", credential],
         "https://"),
        (["claude", "--remote", URL, "--credential", credential, "--hooks", "--wake"],
         "not with --remote"),
    ):
        done = cli("install", *argv)
        assert done.code == 2 and why in done.err, done.err


SETTINGS = {"claude": (".mcp.json", ".claude/settings.local.json"),
            "codex": (".codex/config.toml", ".codex/hooks.json"),
            "gemini": (".gemini/settings.json", ".gemini/settings.json"),
            "cursor": (".cursor/mcp.json", ".cursor/hooks.json")}
REMOTE_ONLY = {"url", "httpUrl", "headers", "bearer_token_env_var"}
LOCAL_ONLY = {"command", "args", "env", "cwd"}


def entry_of(work: Path, host: str) -> dict[str, Any]:
    doc = load(work / SETTINGS[host][0])
    return dict((doc.get("mcpServers") or doc["mcp_servers"])["mailslot"])


def hook_commands(work: Path, host: str) -> list[str]:
    from mailslot.frontends.install.entries import our_hook_commands

    return list(our_hook_commands(load(work / SETTINGS[host][1])))


@pytest.mark.parametrize("host", sorted(SETTINGS))
def test_switching_between_local_and_remote_leaves_nothing_of_the_other(
        cli: Cli, isolated: Path, credential: str, host: str) -> None:
    work = isolated / "work"
    local = ("install", host, "--agent", "ada", "--hooks")
    assert cli(*local).code == 0
    first = entry_of(work, host)
    assert cli("install", host, "--remote", URL, "--credential", credential).code == 0
    remote = entry_of(work, host)
    assert not LOCAL_ONLY & set(remote)
    assert remote.get("type") in (None, "http")  # never a stdio type beside a url
    # the hooks, installed before, follow the entry even without --hooks this time
    assert hook_commands(work, host) and all(f"--remote {URL}" in c
                                             for c in hook_commands(work, host))
    assert cli("install", host, "--agent", "ada").code == 0
    assert entry_of(work, host) == first  # exactly the local entry again
    assert not REMOTE_ONLY & set(entry_of(work, host))
    assert hook_commands(work, host) and all("--remote" not in c and "--agent ada" in c
                                             for c in hook_commands(work, host))


def test_cursor_remote_entry_has_no_stdio_type(cli: Cli, isolated: Path,
                                               credential: str) -> None:
    assert cli("install", "cursor", "--agent", "ada").code == 0
    assert entry_of(isolated / "work", "cursor")["type"] == "stdio"
    assert cli("install", "cursor", "--remote", URL, "--credential", credential).code == 0
    assert entry_of(isolated / "work", "cursor") == {
        "url": f"{URL}/mcp", "headers": {"Authorization": "Bearer ${env:MAILSLOT_SECRET}"}}
