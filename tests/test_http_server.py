"""``serve --http``: a real uvicorn server on 127.0.0.1, the SDK's Streamable HTTP client.

Credentials here come from a table (the test's ``authenticate``); the door, the sessions
and the tools are the real ones.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from httpkit import Running, start
from mailslot.access import authority
from mailslot.core.errors import InvalidInput
from mailslot.frontends.http.guard import RateLimit
from mailslot.frontends.http.http_server import Listen, parse_listen
from test_mcp_server import TOOLS, call, text

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def connect(running: Running, agent: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {running.secret(agent)}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            Client(streamable_http_client(running.url, http_client=http)) as client:
        yield client


def bearer(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


def post(running: Running, headers: dict[str, str], body: bytes = b"{}") -> httpx2.Response:
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    return httpx2.post(running.url, content=body, headers={**base, **headers}, timeout=30)


async def test_every_tool_over_http(running: Running) -> None:
    async with connect(running, "claude") as claude:
        assert {t.name for t in (await claude.list_tools()).tools} == TOOLS
        sent = await call(claude, "send_message", to="gemini", subject="hi", body="hello")
        assert sent["from"] == "claude"
        cast = await call(claude, "send_message", to="all", subject="all", body="everyone")
        assert (await call(claude, "retract_broadcast", message_id=cast["id"]))["retracted"]
        status = await call(claude, "message_status", message_id=sent["id"])
        assert status["recipients"][0]["agent"] == "gemini"
        agents = await call(claude, "list_agents")
        assert agents["you"] == "claude"
        mine = (await call(claude, "list_agents", sessions=True, name="claude"))["sessions"]
        assert [(s["program"], s["online"]) for s in mine] == [("http", True)]
    async with connect(running, "gemini") as gemini:
        page = await call(gemini, "read_messages")
        assert [m["id"] for m in page["messages"]] == [sent["id"]]
        assert (await call(gemini, "mark_done", message_ids=sent["id"], state="read")
                )["messages"][0]["state"] == "read"
        answer = await call(gemini, "reply", message_id=sent["id"], body="got it")
        assert answer["from"] == "gemini" and answer["to"] == ["claude"]
        done = await call(gemini, "mark_done", message_ids=[sent["id"]])
        assert done["messages"][0]["state"] == "done"


async def test_one_credential_never_reads_anothers_mail(running: Running) -> None:
    running.box("gemini").send("claude", "private", "for claude only")
    async with connect(running, "gemini") as gemini:
        page = await call(gemini, "read_messages")
        assert page["messages"] == []
        for other in ("claude", "all", "CLAUDE"):
            refused = await gemini.call_tool("read_messages", {"for": other})
            assert refused.is_error and "only its own inbox" in text(refused)
            assert "private" not in text(refused)
        own = await call(gemini, "read_messages", **{"for": "gemini"})
        assert own["messages"] == []
        sent = await call(gemini, "send_message", to="claude", subject="x", body="y")
        assert sent["from"] == "gemini"  # the credential decides, not an argument
        claimed = await gemini.call_tool("send_message", {"to": "claude", "subject": "x",
                                                          "body": "y", "from": "claude"})
        assert claimed.is_error
        assert text(claimed) == "send_message takes no 'from': you send as gemini"


async def test_remote_agents_see_no_one_elses_status_pids_folders_or_machines(
        running: Running) -> None:
    private = running.box("claude").send("helper", "private", "b")
    async with connect(running, "claude") as claude, connect(running, "gemini") as gemini:
        for raw in (private.id, private.id[:12], private.id.rsplit("_", 1)[1]):
            refused = await gemini.call_tool("message_status", {"message_id": raw})
            assert refused.is_error and "no message" in text(refused), text(refused)
            assert raw == private.id or (private.id not in text(refused)
                                         and "helper" not in text(refused))
        assert (await call(claude, "message_status", message_id=private.id))["id"] \
            == private.id
        for client in (claude, gemini):
            listed = {a["name"]: a for a in (await call(client, "list_agents"))["agents"]}
            assert listed["claude"]["online"] is True and listed["claude"]["sessions"]
            for session in listed["claude"]["sessions"]:
                assert (session["pid"], session["hostname"], session["cwd"]) == (None,) * 3
            sessions = (await call(client, "list_agents", sessions=True, name="claude"))["sessions"]
            assert sessions and all(s["pid"] is None for s in sessions)


async def test_a_childs_credential_is_limited_like_a_child(running: Running) -> None:
    async with connect(running, "helper") as helper:
        refused = await helper.call_tool("send_message", {"to": "gemini", "subject": "x",
                                                          "body": "y"})
        assert refused.is_error and "child agent" in text(refused)
        refused = await helper.call_tool("send_message", {"to": "all", "subject": "x", "body": "y"})
        assert refused.is_error
        sent = await call(helper, "send_message", to="claude", subject="done", body="ok")
        assert sent["from"] == "helper"


async def test_a_replaced_http_session_writes_nothing(running: Running) -> None:
    async with connect(running, "claude") as claude:
        await call(claude, "send_message", to="gemini", subject="a", body="b")
        session = (await call(claude, "list_agents", sessions=True, name="claude"))["sessions"][0]
        running.box("claude").start_session("newer", replace=session["session"])
        refused = await claude.call_tool("send_message", {"to": "gemini", "subject": "c",
                                                          "body": "d"})
        assert refused.is_error and "replaced" in text(refused)


def test_auth_failures_are_401_and_say_nothing(running: Running) -> None:
    answers = [post(running, h) for h in (
        {}, {"authorization": "Bearer"}, {"authorization": "Basic czpz"},
        {"authorization": "Bearer wrong"})]
    rotated = running.secret("gemini")
    authority.rotate(running.store, "gemini", path=running.files["gemini"])
    answers.append(post(running, bearer(rotated)))
    authority.revoke(running.store, "claude")
    answers.append(post(running, bearer(running.secret("claude"))))
    answers.append(post(running, bearer(running.secret("helper"))))  # its parent revoked
    assert {a.status_code for a in answers} == {401}
    assert {a.text for a in answers} == {'{"error": "unauthorized"}'}
    assert all(a.headers["www-authenticate"].startswith("Bearer") for a in answers)


async def test_a_revoked_credential_is_refused_mid_session(running: Running) -> None:
    async with connect(running, "gemini") as gemini:
        await call(gemini, "list_agents")
        authority.revoke(running.store, "gemini")
        with pytest.raises(MCPError):
            await gemini.call_tool("list_agents", {})


def test_a_session_of_one_credential_does_not_exist_for_another(running: Running) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    opened = post(running, bearer(running.secret("claude")), json.dumps(init).encode())
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
    mine = post(running, {**bearer(running.secret("claude")), "mcp-session-id": session,
                          "mcp-protocol-version": "2025-11-25"}, ping)
    theirs = post(running, {**bearer(running.secret("gemini")), "mcp-session-id": session,
                            "mcp-protocol-version": "2025-11-25"}, ping)
    assert mine.status_code == 200
    assert theirs.status_code == 404


def test_host_and_origin_are_checked(running: Running) -> None:
    auth = bearer(running.secret("claude"))
    assert post(running, {**auth, "host": "evil.example"}).status_code == 421
    assert post(running, {**auth, "host": f"evil.example:{running.port}"}).status_code == 421
    assert post(running, {**auth, "origin": "http://evil.example"}).status_code == 403
    assert post(running, {**auth, "origin": f"http://localhost:{running.port}"}
                ).status_code != 403


def test_oversized_requests_are_refused(running: Running) -> None:
    auth = bearer(running.secret("claude"))
    assert post(running, auth, b"x" * (65 * 1024)).status_code == 413
    huge = {**auth, "x-filler": "y" * (17 * 1024)}
    assert post(running, huge).status_code in (400, 431)


def test_rate_limit_per_credential(root: Path) -> None:
    for running in start(root, rate=2):  # a token back every 30 s: no test is that slow
        auth = bearer(running.secret("claude"))
        assert [post(running, auth).status_code != 429 for _ in range(2)] == [True, True]
        refused = post(running, auth)
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert post(running, bearer(running.secret("gemini"))).status_code != 429


def test_access_log_holds_no_subject_body_or_secret(
        running: Running, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="mailslot.frontends.http.access")
    send = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "send_message", "arguments": {"to": "gemini", "subject": "SUBJ-42",
                                              "body": "BODY-42"}}}
    post(running, bearer(running.secret("claude")), json.dumps(send).encode())
    post(running, bearer("wrong-secret"))
    lines = [r.getMessage() for r in caplog.records if r.name == "mailslot.frontends.http.access"]
    assert lines and all("POST /mcp" in line for line in lines)
    logged = "\n".join(lines)
    for secret in ("SUBJ-42", "BODY-42", "wrong-secret", running.secret("claude"), "claude",
                   "gemini"):
        assert secret not in logged


def test_token_bucket_refills() -> None:
    now = [0.0]
    rate = RateLimit(60, clock=lambda: now[0])
    assert all(rate.wait_for("k") == 0 for _ in range(60))
    assert rate.wait_for("k") == pytest.approx(1.0)
    now[0] += 1.0
    assert rate.wait_for("k") == 0


def test_listening_rules() -> None:
    assert parse_listen("8080") == ("127.0.0.1", 8080)
    assert parse_listen("[::1]:8080") == ("::1", 8080)
    assert parse_listen("0.0.0.0:9") == ("0.0.0.0", 9)
    assert parse_listen("0") == ("127.0.0.1", 0)  # any free port
    for bad in ("", "x", "1:-1", "1:70000"):
        with pytest.raises(InvalidInput):
            parse_listen(bad)
    Listen("::1", 1)
    Listen("localhost", 1)
    with pytest.raises(InvalidInput, match="TLS"):
        Listen("0.0.0.0", 8080)
    with pytest.raises(InvalidInput, match="together"):
        Listen("0.0.0.0", 8080, tls_cert="c")
    Listen("0.0.0.0", 8080, tls_cert="c", tls_key="k")
    proxied = Listen("10.0.0.5", 8080, proxy="10.0.0.1", names=("mail.example.org",))
    door = proxied.door(max_body_bytes=1, rate_per_minute=1)
    assert door.proxy == "10.0.0.1"
    assert "mail.example.org" in door.allowed_hosts
    assert "https://mail.example.org" in door.allowed_origins
    with pytest.raises(InvalidInput):
        Listen("10.0.0.5", 8080, proxy="not-an-ip")
