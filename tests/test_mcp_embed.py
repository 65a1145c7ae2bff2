"""The library API: mailslot's tools added to an MCP server of the tests' own (built on the
official SDK), bound to an identity, spoken to over real stdio."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from mailslot import FileStore, Mailbox, add_mailbox_tools
from mailslot.core.errors import InvalidInput
from mailslot.frontends.mcp import tools as mcp_tools

Box = Callable[[str | None], Mailbox]

OWN_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer
from mailslot import add_mailbox_tools

server = MCPServer("host-app", instructions="The host app's own server.")


@server.tool()
def ping() -> str:
    '''The host app's own tool.'''
    return "pong"


add_mailbox_tools(server, "embedded", mailbox=sys.argv[1])
server.run("stdio")
"""


def converse(script: Path, root: Path, calls: list[tuple[str, dict[str, Any]]]
             ) -> dict[int, dict[str, Any]]:
    """Initialize, list the tools, make ``calls``; every answer by its request id."""
    lines: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        *({"jsonrpc": "2.0", "id": n, "method": "tools/call",
           "params": {"name": name, "arguments": args}}
          for n, (name, args) in enumerate(calls, start=2))]
    answers: dict[int, dict[str, Any]] = {}
    with subprocess.Popen([sys.executable, str(script), str(root)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True) as server:
        assert server.stdin is not None and server.stdout is not None
        try:
            for line in lines:  # one request at a time: each answered before the next
                server.stdin.write(json.dumps(line) + "\n")
                server.stdin.flush()
                if "id" in line:
                    answer = json.loads(server.stdout.readline())
                    answers[answer["id"]] = answer
        finally:
            server.kill()
    return answers


def test_an_existing_server_gets_every_tool_bound_to_its_identity(
        box: Box, root: Path, tmp_path: Path) -> None:
    script = tmp_path / "own_server.py"
    script.write_text(OWN_SERVER)
    sent = box("bob").send("embedded", "hello embedded", "are you there?")
    answers = converse(script, root, [
        ("ping", {}),
        ("read_messages", {}),
        ("send_message", {"to": "bob", "subject": "yes", "body": "here"}),
        ("send_message", {"to": "bob", "subject": "x", "body": "y", "from": "alice"}),
    ])
    assert answers[0]["result"]["instructions"] == "The host app's own server."
    names = [t["name"] for t in answers[1]["result"]["tools"]]
    assert names == ["ping", *(fn.__name__ for fn, _, _ in mcp_tools.TOOLS)]
    assert answers[2]["result"]["content"][0]["text"] == "pong"
    read = answers[3]["result"]["content"][0]["text"]
    assert read.startswith("[mailslot] Messages from other agents follow.")
    assert "> hello embedded" in read and sent.id in read
    assert not answers[4]["result"].get("isError")
    refused = answers[5]["result"]
    assert refused["isError"] and "you send as embedded" in refused["content"][0]["text"]
    inbox = FileStore(root).entries("bob", ("unread",))
    assert len(inbox) == 1 and "_embedded_to_bob_" in inbox[0][0]


def test_a_bad_identity_is_refused_before_anything_is_added(root: Path) -> None:
    server: MCPServer[Any] = MCPServer("host-app")
    with pytest.raises(InvalidInput):
        add_mailbox_tools(server, "Not A Name", mailbox=str(root))
    assert asyncio.run(server.list_tools()) == []
