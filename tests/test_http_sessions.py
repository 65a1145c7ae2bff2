"""``serve --http``: each MCP session is a server session of its agent (listed, fenced by
request headers, ended by DELETE, by an idle timeout and at shutdown). A real uvicorn on
127.0.0.1 and the SDK's Streamable HTTP client with the session handshake."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import Result
from httpkit import Running, start
from mailslot.frontends.http import mcp_sessions as http_sessions
from support import wait_for
from test_mcp_server import call, text

pytestmark = pytest.mark.anyio
Cli = Callable[..., Result]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}


@asynccontextmanager
async def connect(running: Running, agent: str, *, delete: bool = True,
                  **headers: str) -> AsyncIterator[Client]:
    """An MCP session (the 2025 handshake) as ``agent``, with extra request headers."""
    headers = {"Authorization": f"Bearer {running.secret(agent)}", **headers}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            Client(streamable_http_client(running.url, http_client=http,
                                          terminate_on_close=delete),
                   mode="legacy") as client:
        yield client


def initialize(running: Running, agent: str, **headers: str) -> httpx2.Response:
    """The opening request of an MCP session, raw, so its answer can be looked at."""
    return httpx2.post(running.url, content=json.dumps(INIT), timeout=30, headers={
        "authorization": f"Bearer {running.secret(agent)}",
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        **headers})


def listed(running: Running, agent: str) -> list[dict[str, Any]]:
    """What ``mailslot sessions AGENT`` shows (the same service call)."""
    return running.box(agent).sessions(agent)


def online(running: Running, agent: str) -> set[str]:
    return {s["session"] for s in listed(running, agent) if s["online"]}


async def test_each_mcp_session_is_a_listed_session_of_its_agent(running: Running) -> None:
    async with connect(running, "claude") as first:
        async with connect(running, "claude") as second:
            seen = (await call(second, "list_agents", sessions=True, name="claude"))["sessions"]
            assert [(s["program"], s["online"]) for s in seen] == [("http", True)] * 2
            assert len({s["session"] for s in seen}) == 2
            assert online(running, "claude") == {s["session"] for s in seen}
            assert online(running, "gemini") == set()
        # the second client ended its session (DELETE): listed as stopped, not online
        wait_for(lambda: len(online(running, "claude")) == 1, what="the DELETE to end it")
        still = (await call(first, "list_agents", sessions=True, name="claude"))["sessions"]
        assert sorted(s["online"] for s in still) == [False, True]
        sent = await call(first, "send_message", to="gemini", subject="a", body="b")
        assert sent["from"] == "claude"
    wait_for(lambda: online(running, "claude") == set(), what="both sessions ended")


def test_the_opening_answer_names_the_new_session(running: Running, cli: Cli) -> None:
    opened = initialize(running, "claude")
    assert opened.status_code == 200
    session = opened.headers["mailslot-session"]
    assert online(running, "claude") == {session}
    assert opened.headers["mcp-session-id"] != session
    shown = cli("sessions", "claude", "--json")  # what a person sees: `mailslot sessions`
    assert shown.code == 0, shown.err
    assert [(s["session"], s["program"], s["online"]) for s in json.loads(shown.out)] == [
        (session, "http", True)]


async def test_fencing_by_request_headers(running: Running) -> None:
    async with connect(running, "claude") as old:
        (mine,) = online(running, "claude")
        refused = initialize(running, "claude", **{"Mailslot-Exclusive": "1"})
        assert refused.status_code == 409
        assert mine in refused.json()["error"] and "--replace-session" in \
            refused.json()["error"]
        unknown = initialize(running, "claude", **{"Mailslot-Replace-Session": "ffffffff"})
        assert unknown.status_code == 422 and "nothing was replaced" in unknown.json()["error"]
        assert online(running, "claude") == {mine}  # neither started a session
        async with connect(running, "claude",
                           **{"Mailslot-Replace-Session": mine}) as new:
            refused_send = await old.call_tool("send_message", {"to": "gemini",
                                                                "subject": "c", "body": "d"})
            assert refused_send.is_error and "replaced" in text(refused_send)
            sent = await call(new, "send_message", to="gemini", subject="e", body="f")
            (newer,) = [s for s in listed(running, "claude") if s["session"] != mine]
            assert newer["online"] and newer["program"] == "http"
            replaced = [s for s in listed(running, "claude") if s["session"] == mine]
            assert replaced[0]["replaced_by"] == newer["session"]
    subjects = [i.message.subject for i in running.box("gemini").page(None).items]
    assert subjects == ["e"] and sent["from"] == "claude"


@pytest.fixture
def quick(root: Path) -> Iterator[Running]:
    """A server that ends a session after three seconds with nothing in flight: long
    enough that two requests in a row keep a session on a loaded machine (at half a
    second, a slow gap between ``initialize`` and ``ping`` ended it), short enough to wait for."""
    yield from start(root, session_idle=3.0)


async def test_a_session_whose_client_is_gone_is_ended(quick: Running) -> None:
    async with connect(quick, "gemini", delete=False) as gemini:
        await call(gemini, "list_agents")
        (gone,) = online(quick, "gemini")
    wait_for(lambda: online(quick, "gemini") == set(), what="the idle timeout")
    ended = listed(quick, "gemini")
    assert [(s["session"], s["online"]) for s in ended] == [(gone, False)]
    # A session that is used stays; once ended, its MCP session id is forgotten too.
    mcp_id = initialize(quick, "gemini").headers["mcp-session-id"]
    assert ping(quick, "gemini", mcp_id).status_code == 200
    wait_for(lambda: online(quick, "gemini") == set(), what="the second idle timeout")
    assert ping(quick, "gemini", mcp_id).status_code == 404


def ping(running: Running, agent: str, mcp_id: str) -> httpx2.Response:
    return httpx2.post(running.url, timeout=30, content=json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "ping"}), headers={
        "authorization": f"Bearer {running.secret(agent)}",
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-session-id": mcp_id, "mcp-protocol-version": "2025-11-25"})


def test_sessions_end_when_the_server_stops(root: Path) -> None:
    server = start(root)
    running = next(server)
    for agent in ("claude", "claude", "gemini"):
        assert initialize(running, agent).status_code == 200
    assert len(online(running, "claude")) == 2 and len(online(running, "gemini")) == 1
    server.close()  # a clean stop, as on SIGTERM
    for agent in ("claude", "gemini"):
        assert listed(running, agent) and online(running, agent) == set()
        assert all(s["program"] == "http" for s in listed(running, agent))


def test_only_an_initialize_opens_a_session(running: Running) -> None:
    auth = {"authorization": f"Bearer {running.secret('claude')}",
            "content-type": "application/json", "accept": "application/json, text/event-stream"}
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert httpx2.post(running.url, content=ping, headers=auth, timeout=30).status_code == 400
    assert httpx2.get(running.url, headers=auth, timeout=30).status_code == 400
    assert online(running, "claude") == set()


def test_sessions_per_credential_are_capped(running: Running,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_sessions, "MAX_PER_CREDENTIAL", 2)
    assert [initialize(running, "claude").status_code for _ in range(2)] == [200, 200]
    refused = initialize(running, "claude")
    assert refused.status_code == 503 and "end one" in refused.text
    assert initialize(running, "gemini").status_code == 200  # another credential's room
    assert len(online(running, "claude")) == 2


def test_each_handshake_names_its_own_agent(running: Running) -> None:
    for agent in ("claude", "gemini", "helper", "claude"):
        opened = initialize(running, agent)
        data = [line[5:] for line in opened.text.splitlines() if line.startswith("data:")]
        result = json.loads(data[-1] if data else opened.text)["result"]
        assert f"You are agent '{agent}'" in result["instructions"]


async def test_concurrent_opens_never_pass_the_cap(running: Running) -> None:
    """Opens that all arrive at once (each starts its session in a thread) still get
    exactly the cap between them; the rest are refused."""
    cap = http_sessions.MAX_PER_CREDENTIAL
    headers = {"authorization": f"Bearer {running.secret('claude')}",
               "content-type": "application/json",
               "accept": "application/json, text/event-stream"}
    limits = httpx2.Limits(max_connections=cap + 32)
    async with httpx2.AsyncClient(timeout=120, limits=limits) as http:
        answers = await asyncio.gather(*(
            http.post(running.url, content=json.dumps(INIT), headers=headers)
            for _ in range(cap + 32)))
    codes = sorted(a.status_code for a in answers)
    assert codes == [200] * cap + [503] * 32
    assert len(online(running, "claude")) == cap


async def test_mail_a_tool_answer_carried_is_surfaced_for_its_own_session(
        running: Running) -> None:
    """The ladder's ``surfaced`` receipt over HTTP: written once the answer carrying the
    mail was sent, naming the session that read it, though two clients' request ids are
    the same numbers."""
    to_gemini = running.box("claude").send("gemini", "Schema", "ready")
    to_claude = running.box("gemini").send("claude", "Build", "green")
    assert running.box("claude").status(to_gemini.id).recipients[0].surfaced is None
    async with connect(running, "gemini") as gemini, connect(running, "claude") as claude:
        await call(gemini, "list_agents")  # the two clients' ids now differ by one
        await call(claude, "read_messages")
        await call(gemini, "read_messages")
        (gemini_session,) = online(running, "gemini")
        (claude_session,) = online(running, "claude")
    for sender, sent, session in (("claude", to_gemini, gemini_session),
                                  ("gemini", to_claude, claude_session)):
        (shown,) = running.box(sender).status(sent.id).recipients
        assert isinstance(shown.surfaced, dict), shown
        assert (shown.rung, shown.surfaced["how"], shown.surfaced["session"]) == (
            "surfaced", "tool", session)


async def test_an_answer_without_mail_or_cut_off_leaves_nothing_waiting(
        running: Running) -> None:
    """Only tool answers that carried mail wait to be recorded, and nothing of a request
    stays behind once it is over (a long-running server must not grow)."""
    from mailslot.frontends.mcp import answered

    running.box("claude").send("gemini", "Schema", "ready")
    async with connect(running, "gemini") as gemini:
        await call(gemini, "list_agents")
        await call(gemini, "read_messages")
    assert answered._pending == {}
