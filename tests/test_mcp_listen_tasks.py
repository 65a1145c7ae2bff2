"""The newest MCP (2026-07-28) with the official SDK's client: ``subscriptions/listen``
tells a listening client of new mail without polling (its own inbox only), and the
tasks extension turns ``send_message`` with ``expect_reply`` into a task the reply
completes. In-process and over ``serve --http``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.server.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError

from httpkit import Running
from mailslot import Mailbox
from mailslot.core.framing import HEADER
from mailslot.frontends.mcp.server import build_server
from test_mcp_server import text

pytestmark = pytest.mark.anyio
Box = Callable[[str | None], Mailbox]
TASKS = "io.modelcontextprotocol/tasks"


class Created(types.Result):
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class TaskParams(types.RequestParams):
    task_id: str


class TasksGet(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"


class TasksCancel(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class TaskState(types.Result):
    task_id: str
    status: str
    status_message: str | None = None
    result: dict[str, Any] | None = None


class ClientTasks(ClientExtension):
    """The client side of the extension: a task is polled until it ends; ``created``
    holds every task the server answered with."""

    identifier = TASKS

    def __init__(self, cancel: bool = False) -> None:
        self.created: list[Created] = []
        self.cancel = cancel

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=Created, resolve=self.resolve)]

    async def resolve(self, claimed: Created, ctx: ClaimContext) -> types.CallToolResult:
        self.created.append(claimed)
        if self.cancel:
            await ctx.session.send_request(
                TasksCancel(params=TaskParams(task_id=claimed.task_id)), types.EmptyResult)
        with anyio.fail_after(60):
            while True:
                state = await ctx.session.send_request(
                    TasksGet(params=TaskParams(task_id=claimed.task_id)), TaskState)
                if state.status == "completed":
                    return types.CallToolResult.model_validate(state.result)
                if state.status == "cancelled":
                    return types.CallToolResult(content=[types.TextContent(
                        type="text", text="cancelled")], is_error=True)
                await anyio.sleep(0.05)


@pytest.fixture
def local(box: Box) -> Callable[..., Any]:
    @asynccontextmanager
    async def open_client(agent: str, **options: Any) -> AsyncIterator[Client]:
        async with Client(build_server(lambda: box(agent)), **options) as client:
            yield client
    return open_client


@pytest.fixture
def remote(running: Running) -> Callable[..., Any]:
    @asynccontextmanager
    async def open_client(agent: str, **options: Any) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {running.secret(agent)}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
                Client(streamable_http_client(running.url, http_client=http),
                       **options) as client:
            yield client
    return open_client


@pytest.fixture(params=["local", "remote"])
def where(request: pytest.FixtureRequest) -> tuple[Callable[..., Any], Box]:
    """A client maker and the service, in-process or over ``serve --http``."""
    if request.param == "local":
        box: Box = request.getfixturevalue("box")
        return request.getfixturevalue("local"), box
    running: Running = request.getfixturevalue("running")
    return request.getfixturevalue("remote"), lambda agent: running.box(agent or "claude")


async def test_a_listener_hears_new_mail_to_its_own_inbox_only(
        where: tuple[Callable[..., Any], Box]) -> None:
    connect, box = where
    async with connect("claude") as claude:
        assert claude.protocol_version == "2026-07-28"
        async with claude.listen(resource_subscriptions=[
                "mail://inbox/claude", "mail://inbox/gemini"]) as heard:
            assert heard.honored.resource_subscriptions == ["mail://inbox/claude"]
            await anyio.to_thread.run_sync(
                lambda: box("gemini").send("helper", "not for claude", "x"))
            sent = await anyio.to_thread.run_sync(
                lambda: box("gemini").send("claude", "for claude", "hello claude"))
            with anyio.fail_after(30):
                event = await heard.__anext__()
            assert event == ResourceUpdated(uri="mail://inbox/claude")
        page = await claude.read_resource("mail://inbox/claude")
        shown = page.contents[0].text  # type: ignore[union-attr]
        assert shown.startswith(HEADER) and sent.id in shown and "> hello claude" in shown
        with pytest.raises(MCPError):
            await claude.read_resource("mail://inbox/gemini")


async def test_send_message_expecting_a_reply_is_a_task_the_reply_completes(
        where: tuple[Callable[..., Any], Box]) -> None:
    connect, box = where
    tasks = ClientTasks()
    async with connect("claude", extensions=[tasks]) as claude:
        async def gemini_replies() -> None:
            with anyio.fail_after(30):
                while not tasks.created:
                    await anyio.sleep(0.02)
            task_id = tasks.created[0].task_id
            await anyio.to_thread.run_sync(lambda: box("gemini").reply(task_id, "LGTM"))

        async with anyio.create_task_group() as group:
            group.start_soon(gemini_replies)
            result = await claude.call_tool("send_message", {
                "to": "gemini", "subject": "review", "body": "please", "expect_reply": True})
        assert [t.status for t in tasks.created] == ["working"]
        assert not result.is_error
        assert text(result).startswith(HEADER) and "> LGTM" in text(result)
        assert result.structured_content is not None
        assert result.structured_content["in_reply_to"] == tasks.created[0].task_id
        plain = await claude.call_tool("send_message", {
            "to": "gemini", "subject": "fyi", "body": "no reply needed"})
        assert plain.structured_content is not None and "id" in plain.structured_content
    async with connect("claude") as undeclared:
        plain = await undeclared.call_tool("send_message", {
            "to": "gemini", "subject": "q", "body": "?", "expect_reply": True})
        assert plain.structured_content is not None and "id" in plain.structured_content


async def test_cancelling_a_task_recalls_unread_mail(
        where: tuple[Callable[..., Any], Box]) -> None:
    connect, box = where
    tasks = ClientTasks(cancel=True)
    async with connect("claude", extensions=[tasks]) as claude:
        result = await claude.call_tool("send_message", {
            "to": "gemini", "subject": "oops", "body": "never mind", "expect_reply": True})
        assert result.is_error and text(result) == "cancelled"
    recalled = tasks.created[0].task_id
    gemini = box("gemini")
    assert [i.message.id for i in gemini.inbox()] == []
    assert gemini.status(recalled).recipients[0].state == "done"
