"""Real ``mailslot serve`` processes over stdio, as a host starts them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

from mailslot import Mailbox
from mailslot.frontends.mcp import stdio as mcp_stdio

pytestmark = pytest.mark.anyio
MAILSLOT = str(Path(sys.executable).parent / "mailslot")


def server(agent: str, root: Path, home: Path) -> StdioServerParameters:
    # A stdio child gets only a few variables from its parent: pass what mailslot needs.
    env = {"MAILSLOT_DIR": str(root), "HOME": str(home)}
    return StdioServerParameters(command=MAILSLOT, args=["serve", "--agent", agent], env=env)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_two_servers_exchange_reply_and_see_each_other(root: Path, isolated: Path) -> None:
    home = isolated / "home"
    async with (
        Client(server("claude", root, home), mode="auto") as claude,
        Client(server("gemini", root, home), mode="legacy") as gemini,
    ):
        agents = {a["name"]: a for a in (await call(claude, "list_agents"))["agents"]}
        assert agents["gemini"]["online"] and agents["claude"]["online"]
        assert agents["gemini"]["sessions"][0]["program"]  # whoever started it: python here

        sent = await call(claude, "send_message", to="gemini", subject="Handshake",
                          body="Are you there?", expect_reply=True)
        shown = await gemini.call_tool("read_messages", {})
        page = shown.structured_content or {}
        assert [m["id"] for m in page["messages"]] == [sent["id"]]
        assert "> Are you there?" in str(shown.content[0].text)  # type: ignore[union-attr]

        answer = await call(gemini, "reply", message_id=sent["id"], body="Yes.")
        status = await call(claude, "message_status", message_id=sent["id"])
        assert status["recipients"] == [
            {**status["recipients"][0], "agent": "gemini", "state": "done"}]
        assert status["replies"] == [answer["id"]]
        answered = await claude.call_tool("read_messages", {})
        assert (answered.structured_content or {})["messages"][0]["from"] == "gemini"
        assert "> Yes." in str(answered.content[0].text)  # type: ignore[union-attr]

    after = {a.name: a for a in Mailbox.open(str(root), "owner").who()}
    assert not after["claude"].online and not after["gemini"].online
    assert after["claude"].last_seen and after["gemini"].last_seen


async def test_stdio_tool_error_text(root: Path, isolated: Path) -> None:
    async with Client(server("gemini", root, isolated / "home")) as client:
        result = await client.call_tool("send_message",
                                        {"to": ["_x"], "subject": "s", "body": "b"})
        claimed = await client.call_tool("send_message", {"to": "all", "subject": "s", "body": "b",
                                                       "sender": "claude"})
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent) and block.text == "recipient '_x' is reserved"
    block = claimed.content[0]
    assert claimed.is_error and isinstance(block, TextContent)
    assert block.text == "send_message takes no 'sender': you send as gemini"


def _who(root: Path) -> dict[str, dict[str, Any]]:
    out = subprocess.run([MAILSLOT, "--dir", str(root), "who", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return {a["name"]: a for a in json.loads(out)}


def test_a_killed_server_stops_counting_as_online(root: Path) -> None:
    root.mkdir(mode=0o700)  # `who` is asked before the server wrote anything
    env = {**os.environ, "MAILSLOT_DIR": str(root)}
    proc = subprocess.Popen([MAILSLOT, "serve", "--agent", "codex"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not _who(root).get("codex", {}).get("online"):
            assert time.monotonic() < deadline, "server never showed as online"
            time.sleep(0.05)
        who = subprocess.run([MAILSLOT, "--dir", str(root), "who"], check=True,
                             capture_output=True, text=True).stdout
        assert "codex" in who and "online (" in who
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.stdout.close()
    codex = _who(root)["codex"]
    assert codex["online"] is False and codex["last_seen"] and codex["sessions"] == []


def test_serve_refuses_to_start_without_identity(root: Path, isolated: Path) -> None:
    work = isolated / "work"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_AGENT"}
    done = subprocess.run([MAILSLOT, "serve"], cwd=work, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("mailslot: error: no identity: a server (and what install "
                                  "registers) needs --agent NAME or MAILSLOT_AGENT")
    assert done.stderr.count("\n") == 1


# The fast stdio wire (mcp_stdio), read and written on the event loop.
_WIRE_SERVER = """
import os, subprocess, sys
import anyio
from mcp.server.mcpserver import MCPServer
from mailslot.frontends.mcp import stdio as mcp_stdio

server = MCPServer("wire")

@server.tool()
async def noisy(size: int) -> str:
    print("stray print")  # a tool's or a child's stdout must never reach the wire
    os.write(1, b"stray write\\n")
    subprocess.run([sys.executable, "-c", "print('child output')"], check=True)
    return "x" * size

@server.tool()
async def descriptors() -> str:
    same = os.path.samestat
    null = os.stat(os.devnull)
    return f"{same(os.fstat(1), os.fstat(2))} {same(os.fstat(0), null)}"

anyio.run(mcp_stdio.run, server)
"""


async def test_the_wire_survives_stray_output_and_large_answers() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-c", _WIRE_SERVER],
                                   env={"PATH": os.environ.get("PATH", "")})
    async with Client(params, mode="legacy") as client:
        for size in (10, 1 << 20, 10):  # a megabyte: many times a pipe's buffer
            result = await client.call_tool("noisy", {"size": size})
            assert not result.is_error
            block = result.content[0]
            assert isinstance(block, TextContent) and block.text == "x" * size
        # While serving, fd 1 is stderr and fd 0 the null device (put back at the end).
        block = (await client.call_tool("descriptors", {})).content[0]
        assert isinstance(block, TextContent) and block.text == "True True"


# Two SDK revisions the fast wire must survive, each consistent in itself: a script run
# before mailslot's own console entry. The public path (run_stdio_async) follows each.
_OPTIONS_BY_KEYWORD = """
import mcp.server.mcpserver.server as api
from mcp.server.lowlevel import Server

run = Server.run

async def run_by_keyword(self, read_stream, write_stream, *, initialization_options,
                         raise_exceptions=False):
    await run(self, read_stream, write_stream, initialization_options, raise_exceptions)

async def run_stdio_async(self):
    async with api.stdio_server() as (read, write):
        low = self._lowlevel_server
        await low.run(read, write, initialization_options=low.create_initialization_options())

Server.run = run_by_keyword
api.MCPServer.run_stdio_async = run_stdio_async
"""
_READER_BY_READLINE = """
import contextlib
import mcp.server.mcpserver.server as api
import mcp.server.stdio as stdio

original = stdio.stdio_server

class ByReadline:
    def __init__(self, stdin):
        self.stdin = stdin
    def __aiter__(self):
        return self
    async def __anext__(self):
        line = await self.stdin.readline()
        if not line:
            raise StopAsyncIteration
        return line

@contextlib.asynccontextmanager
async def stdio_server(stdin=None, stdout=None):
    async with original(None if stdin is None else ByReadline(stdin), stdout) as streams:
        yield streams

stdio.stdio_server = api.stdio_server = stdio_server
"""
_THEN_SERVE = """
import sys
from mailslot.entry import main
sys.argv[0] = "mailslot"
sys.exit(main())
"""


@pytest.mark.parametrize("revision", [_OPTIONS_BY_KEYWORD, _READER_BY_READLINE],
                         ids=["run-takes-options-by-keyword", "stdio-reader-reads-by-readline"])
async def test_serve_answers_over_stdio_on_another_sdk_revision(
        revision: str, root: Path, isolated: Path) -> None:
    env = {"MAILSLOT_DIR": str(root), "HOME": str(isolated / "home")}
    params = StdioServerParameters(command=sys.executable, env=env,
                                   args=["-c", revision + _THEN_SERVE, "serve",
                                         "--agent", "codex"])
    async with Client(params, mode="legacy") as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"send_message", "read_messages"} <= tools
        sent = await call(client, "send_message", to="claude", subject="Still here",
                          body="Served on another SDK revision.", new=True)
    inbox = Mailbox.open(str(root), "claude").inbox()
    assert [(i.message.id, i.message.subject) for i in inbox] == [(sent["id"], "Still here")]


def test_the_fast_wire_finds_what_it_needs_in_the_installed_sdk() -> None:
    from mcp.server.mcpserver import MCPServer

    assert mcp_stdio.sdk_shape(MCPServer("wire")) is not None


def _no_lowlevel_server(monkeypatch: pytest.MonkeyPatch, server: Any) -> None:
    monkeypatch.delattr(server, "_lowlevel_server")


def _run_by_keyword(monkeypatch: pytest.MonkeyPatch, server: Any) -> None:
    from mcp.server.lowlevel import Server

    async def run(self: Any, read: Any, write: Any, *, initialization_options: Any) -> None:
        raise AssertionError("never called")

    monkeypatch.setattr(Server, "run", run)


def _no_message_adapter(monkeypatch: pytest.MonkeyPatch, server: Any) -> None:
    import mcp_types

    monkeypatch.delattr(mcp_types, "jsonrpc_message_adapter")


def _messages_parse_otherwise(monkeypatch: pytest.MonkeyPatch, server: Any) -> None:
    import mcp_types

    def validate_json(line: str) -> Any:  # no by_name: a later pydantic's signature
        raise AssertionError("never called")

    adapter = type("Adapter", (), {"validate_json": staticmethod(validate_json)})()
    monkeypatch.setattr(mcp_types, "jsonrpc_message_adapter", adapter)


@pytest.mark.parametrize("reshape", [_no_lowlevel_server, _run_by_keyword,
                                     _no_message_adapter, _messages_parse_otherwise])
def test_the_fast_wire_steps_aside_for_an_sdk_shaped_otherwise(
        reshape: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("wire")
    reshape(monkeypatch, server)
    assert mcp_stdio.sdk_shape(server) is None
