"""Bounded authority from every front end: the MCP stdio server, install, and a grep of
everything mailslot prints or writes for the secret."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import Result
from mailslot.frontends.cli.main import main

pytestmark = pytest.mark.anyio
MAILSLOT = str(Path(sys.executable).parent / "mailslot")


def admin(*argv: str) -> None:
    assert main(["agent", *argv, "--yes"]) == 0


def params(root: Path, home: Path, *args: str) -> StdioServerParameters:
    env = {"MAILSLOT_DIR": str(root), "HOME": str(home)}
    return StdioServerParameters(command=MAILSLOT, args=["serve", *args], env=env)


def creds(isolated: Path) -> Path:
    return isolated / "home" / ".config" / "mailslot" / "credentials"


async def tool(client: Client, name: str, **arguments: Any) -> tuple[bool, str]:
    result = await client.call_tool(name, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    return bool(result.is_error), text


async def test_revoked_credential_refused_at_the_servers_next_call(
        root: Path, isolated: Path) -> None:
    admin("add", "claude")
    cred = str(creds(isolated) / "claude.json")
    async with Client(params(root, isolated / "home", "--credential", cred)) as claude:
        failed, _ = await tool(claude, "send_message", to="gemini", subject="s", body="b",
                               new=True)
        assert not failed
        admin("revoke", "claude")
        failed, text = await tool(claude, "send_message", to="gemini", subject="s2",
                                  body="b")
        assert failed and "wrong, rotated or revoked" in text
        failed, text = await tool(claude, "read_messages")
        assert failed


async def test_child_server_may_talk_to_its_parent_only(root: Path, isolated: Path) -> None:
    admin("add", "claude")
    admin("add", "reviewer", "--parent", "claude")
    cred = str(creds(isolated) / "reviewer.json")
    async with Client(params(root, isolated / "home", "--credential", cred)) as child:
        failed, text = await tool(child, "send_message", to="gemini", subject="s", body="b",
                                  new=True)
        assert failed and "only to its parent" in text
        failed, text = await tool(child, "send_message", to="all", subject="s", body="b")
        assert failed and "cannot broadcast" in text
        failed, text = await tool(child, "read_messages", **{"for": "claude"})
        assert failed and "only its own inbox" in text
        failed, _ = await tool(child, "send_message", to="claude", subject="s", body="b")
        assert not failed


async def test_peer_of_server(root: Path, isolated: Path) -> None:
    async with Client(params(root, isolated / "home", "--agent", "helper",
                             "--peer-of", "claude")) as child:
        failed, text = await tool(child, "send_message", to="gemini", subject="s", body="b",
                                  new=True)
        assert failed and "only to its parent" in text


def test_serve_refuses_a_bad_credential_at_start(root: Path, isolated: Path) -> None:
    admin("add", "claude")
    cred = str(creds(isolated) / "claude.json")
    admin("rotate", "claude", "--credential-file", str(isolated / "new.json"))
    done = subprocess.run([MAILSLOT, "serve", "--credential", cred], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 1
    assert done.stderr.decode().startswith("mailslot: error: the credential for claude")


def test_require_credentials_refuses_an_unregistered_server(root: Path) -> None:
    root.mkdir(mode=0o700)
    (root / "config.json").write_text(json.dumps({"require_credentials": True}))
    (root / "config.json").chmod(0o600)
    done = subprocess.run([MAILSLOT, "--agent", "gemini", "send", "--to", "x", "--subject",
                           "s", "--body", "b", "--new"], capture_output=True, timeout=60)
    assert done.returncode == 1 and b"requires credentials" in done.stderr


def test_install_registers_the_server_with_its_credential(
        cli: Any, isolated: Path) -> None:
    admin("add", "claude", "--runtime", "claude-code")
    cred = str(creds(isolated) / "claude.json")
    result: Result = cli("install", "claude", "--credential", cred, "--hooks")
    assert result.code == 0, result.err
    doc = json.loads((isolated / "work" / ".mcp.json").read_text())
    args = doc["mcpServers"]["mailslot"]["args"]
    assert args[:3] == ["serve", "--credential", cred] and "--agent" not in args
    secret = json.loads(Path(cred).read_text())["secret"]
    assert secret not in (isolated / "work" / ".mcp.json").read_text()
    hooks = (isolated / "work" / ".claude" / "settings.local.json").read_text()
    assert "--agent claude" in hooks and secret not in hooks


async def test_no_secret_in_any_output_log_event_error_or_file(
        root: Path, isolated: Path, cli: Any) -> None:
    """Every way a secret could leak, exercised, then grepped for every secret issued."""
    outputs: list[str] = []

    def run(*argv: str) -> None:
        result: Result = cli(*argv)
        outputs.extend([result.out, result.err])

    for fmt in ([], ["--json"]):
        run("agent", "add", f"claude{len(fmt)}", "--yes", *fmt)
        run("agent", "add", f"kid{len(fmt)}", "--parent", f"claude{len(fmt)}", "--yes", *fmt)
        run("agent", "list", *fmt)
        run("agent", "show", f"claude{len(fmt)}", *fmt)
        run("agent", "rotate", f"claude{len(fmt)}", "--yes", *fmt)
        run("agent", "add", f"claude{len(fmt)}", "--yes", *fmt)  # an error
    folder = creds(isolated)
    cred = str(folder / "claude0.json")
    codes = []

    def as_(path: str, *argv: str) -> None:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("MAILSLOT_CREDENTIAL", path)
            result: Result = cli(*argv)
        outputs.extend([result.out, result.err])
        codes.append(result.code)

    as_(cred, "send", "--to", "gemini", "--subject", "s", "--body", "b", "--new", "--json")
    as_(str(folder / "kid0.json"), "send", "--to", "claude0", "--subject", "s", "--body",
        "b", "--json")  # refused: a child of a rotated parent
    as_(cred, "whoami", "--json")
    as_(cred, "who", "--json")
    as_(cred, "inbox", "--json")
    run("doctor", "--deep")
    assert codes == [0, 1, 0, 0, 0]
    async with Client(params(root, isolated / "home", "--credential", cred)) as claude:
        for name, arguments in [("send_message", {"to": "gemini", "subject": "s",
                                                  "body": "b"}),
                                ("read_messages", {}), ("list_agents", {})]:
            result = await claude.call_tool(name, arguments)
            outputs.append(result.model_dump_json())
    run("agent", "revoke", "claude0", "--yes")
    as_(cred, "send", "--to", "gemini", "--subject", "s", "--body", "b")
    assert codes[-1] == 1
    secrets = [json.loads(p.read_text())["secret"] for p in folder.iterdir()]
    assert len(secrets) == 4 and (root / "log" / "events.jsonl").exists()
    everything = "\n".join(outputs)
    for path in root.rglob("*"):
        if path.is_file():
            everything += path.read_text(errors="replace")
    for path in (isolated / "home").rglob("*"):
        if path.is_file() and path.parent != folder:
            everything += path.read_text(errors="replace")
    for secret in secrets:
        assert secret not in everything
