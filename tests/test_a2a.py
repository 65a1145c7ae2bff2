"""A2A v1.0 on ``serve --http``, spoken to by the official ``a2a-sdk`` client: cards,
SendMessage as mail from the caller's own identity, tasks that follow the ladder, gates
and the governor as REJECTED, CancelTask as a recall, streams, push notifications only
to the hosts the owner allows, and the door's refusals."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from httpkit import Running

pytestmark = pytest.mark.anyio
S = TaskState


def base(running: Running) -> str:
    return running.url.removesuffix("/mcp")


@asynccontextmanager
async def a2a(running: Running, caller: str, agent: str, *, streaming: bool = False,
              binding: str = "JSONRPC") -> AsyncIterator[Client]:
    """The SDK's client of ``agent``, authenticated as ``caller`` (its own secret)."""
    headers = {"Authorization": f"Bearer {running.secret(caller)}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        card = await A2ACardResolver(http, f"{base(running)}/a2a/{agent}").get_agent_card()
        client = ClientFactory(ClientConfig(
            httpx_client=http, streaming=streaming,
            supported_protocol_bindings=[binding])).create(card)
        try:
            yield client
        finally:
            await client.close()


def ask(text: str, **config: Any) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()),
                        parts=[Part(text=text)]),
        configuration=SendMessageConfiguration(return_immediately=True, **config))


async def send(client: Client, text: str, **config: Any) -> Task:
    return await sent_by(client, ask(text, **config))


async def sent_by(client: Client, request: SendMessageRequest) -> Task:
    events = [e async for e in client.send_message(request)]
    assert len(events) == 1 and events[0].WhichOneof("payload") == "task"
    return events[0].task


async def test_each_agent_has_a_card_naming_its_endpoint_and_the_bearer_scheme(
        running: Running) -> None:
    headers = {"Authorization": f"Bearer {running.secret('claude')}"}
    async with httpx.AsyncClient(headers=headers) as http:
        card = await A2ACardResolver(http, f"{base(running)}/a2a/gemini").get_agent_card()
        assert card.name == "gemini"
        assert [s.id for s in card.skills] == ["mail"]
        assert card.security_schemes["mailslot"].http_auth_security_scheme.scheme == "bearer"
        assert {(i.url, i.protocol_binding, i.protocol_version)
                for i in card.supported_interfaces} == {
            (f"{base(running)}/a2a/gemini", "JSONRPC", "1.0"),
            (f"{base(running)}/a2a/gemini", "HTTP+JSON", "1.0")}
        assert card.capabilities.streaming and not card.capabilities.push_notifications
        missing = await http.get(f"{base(running)}/a2a/nobody/.well-known/agent-card.json")
        assert missing.status_code == 404


async def test_send_message_is_mail_from_the_caller_and_completes_with_the_reply(
        running: Running) -> None:
    async with a2a(running, "claude", "gemini") as client:
        task = await send(client, "please review PR 12\n\nthe login fix")
        assert task.status.state == S.TASK_STATE_SUBMITTED
        gemini = running.box("gemini")
        page = gemini.inbox()
        assert [(m.id, m.sender, m.subject) for m in (i.message for i in page)] == [
            (task.id, "claude", "please review PR 12")]
        assert gemini.read(task.id).message.body == "please review PR 12\n\nthe login fix"
        got = await client.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == S.TASK_STATE_WORKING
        gemini.reply(task.id, "LGTM, merged")
        got = await client.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == S.TASK_STATE_COMPLETED
        assert got.status.message.parts[0].text == "LGTM, merged"
        assert got.status.message.role == Role.ROLE_AGENT
        assert got.artifacts[0].parts[0].text == "LGTM, merged"
        assert got.history[0].parts[0].text.startswith("please review PR 12")


async def test_a_gate_or_the_governor_rejects_with_the_reason_and_stores_nothing(
        running: Running) -> None:
    running.box("gemini").gate.switch(True)
    async with a2a(running, "claude", "gemini") as client:
        task = await send(client, "let me in")
        assert task.status.state == S.TASK_STATE_REJECTED
        assert "gemini accepts mail only from" in task.status.message.parts[0].text
        assert running.box("gemini").inbox() == []
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=task.id))
    configure(running, governor={"paused": ["gemini"]})
    async with a2a(running, "gemini", "claude") as client:
        task = await send(client, "anyone?")
        assert task.status.state == S.TASK_STATE_REJECTED
        assert "paused by the owner" in task.status.message.parts[0].text
        assert running.box("claude").inbox() == []


async def test_cancel_task_recalls_unread_mail_only(running: Running) -> None:
    async with a2a(running, "claude", "gemini") as client:
        first = await send(client, "never mind")
        canceled = await client.cancel_task(CancelTaskRequest(id=first.id))
        assert canceled.status.state == S.TASK_STATE_CANCELED
        gemini = running.box("gemini")
        assert gemini.inbox() == []
        assert gemini.status(first.id).recipients[0].state == "done"
        assert (await client.get_task(GetTaskRequest(id=first.id))).status.state == \
            S.TASK_STATE_CANCELED
        second = await send(client, "read me")
        gemini.read(second.id)
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=second.id))
        assert gemini.status(second.id).recipients[0].state == "read"
        assert (await client.get_task(GetTaskRequest(id=second.id))).status.state == \
            S.TASK_STATE_WORKING


async def test_subscribe_streams_submitted_working_completed(running: Running) -> None:
    async with a2a(running, "claude", "gemini") as client, \
            a2a(running, "claude", "gemini", streaming=True) as streamer:
        task = await send(client, "stream me")
        seen: list[tuple[str, str]] = []
        subscribed = asyncio.Event()

        async def listen() -> None:
            async for event in streamer.subscribe(SubscribeToTaskRequest(id=task.id)):
                kind = event.WhichOneof("payload")
                if kind == "task":
                    seen.append(("task", S.Name(event.task.status.state)))
                    subscribed.set()
                elif kind == "status_update":
                    seen.append(("status", S.Name(event.status_update.status.state)))
                elif kind == "artifact_update":
                    seen.append(("artifact", event.artifact_update.artifact.parts[0].text))

        listening = asyncio.create_task(listen())
        await asyncio.wait_for(subscribed.wait(), 30)
        gemini = running.box("gemini")
        await asyncio.to_thread(gemini.read, task.id)
        await until(lambda: ("status", "TASK_STATE_WORKING") in seen)
        await asyncio.to_thread(gemini.reply, task.id, "streamed back")
        await asyncio.wait_for(listening, 30)
        assert seen == [("task", "TASK_STATE_SUBMITTED"), ("status", "TASK_STATE_WORKING"),
                        ("artifact", "streamed back"), ("status", "TASK_STATE_COMPLETED")]
        with pytest.raises(UnsupportedOperationError):  # a finished task has no stream
            async for _ in streamer.subscribe(SubscribeToTaskRequest(id=task.id)):
                pass


async def test_a_streaming_send_ends_with_the_reply(running: Running) -> None:
    async with a2a(running, "claude", "gemini", streaming=True) as streamer:
        states: list[str] = []

        async def stream() -> None:
            request = ask("streamed hello")
            async for event in streamer.send_message(request):
                kind = event.WhichOneof("payload")
                if kind == "task":
                    states.append(event.task.id)
                elif kind == "status_update":
                    states.append(S.Name(event.status_update.status.state))

        streaming = asyncio.create_task(stream())
        await until(lambda: bool(states))
        await asyncio.to_thread(running.box("gemini").reply, states[0], "hi back")
        await asyncio.wait_for(streaming, 30)
        assert states[1:] == ["TASK_STATE_COMPLETED"]


async def test_tasks_are_the_callers_own(running: Running) -> None:
    async with a2a(running, "claude", "gemini") as claude:
        mine = await send(claude, "mine")
    running.box("claude").send("helper", "to helper", "not a task at gemini")
    async with a2a(running, "claude", "gemini") as claude:
        listed = await claude.list_tasks(ListTasksRequest())
        assert [t.id for t in listed.tasks] == [mine.id]
    async with a2a(running, "gemini", "gemini") as other:
        with pytest.raises(TaskNotFoundError):
            await other.get_task(GetTaskRequest(id=mine.id))
        with pytest.raises(TaskNotFoundError):
            await other.cancel_task(CancelTaskRequest(id=mine.id))
        assert list((await other.list_tasks(ListTasksRequest())).tasks) == []


async def test_the_rest_binding_and_file_parts(running: Running) -> None:
    async with a2a(running, "claude", "gemini", binding="HTTP+JSON") as client:
        task = await send(client, "over REST")
        assert task.status.state == S.TASK_STATE_SUBMITTED
        got = await client.get_task(GetTaskRequest(id=task.id))
        assert got.history[0].parts[0].text == "over REST"
        request = ask("see the file")
        request.message.parts.append(Part(url="https://example.com/a.txt", filename="a.txt"))
        request.message.parts.append(Part(raw=b"\x00bytes"))
        with pytest.raises(ContentTypeNotSupportedError):
            await sent_by(client, request)
        del request.message.parts[-1]
        sent = await sent_by(client, request)
        body = running.box("gemini").read(sent.id).message.body
        assert body == "see the file\n\nfile: a.txt: https://example.com/a.txt"


def test_a_wrong_or_missing_secret_is_refused(running: Running) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    where = f"{base(running)}/a2a/gemini"
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}):
        for answer in (httpx.post(where, json=body, headers={"A2A-Version": "1.0", **headers}),
                       httpx.get(f"{where}/.well-known/agent-card.json", headers=headers)):
            assert answer.status_code == 401
            assert answer.json() == {"error": "unauthorized"}
    assert running.box("gemini").inbox() == []


class _Pushed(BaseHTTPRequestHandler):
    got: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["content-length"])
        self.got.append((self.headers.get("x-a2a-notification-token", ""),
                         json.loads(self.rfile.read(length))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


async def test_push_notifications_go_only_to_hosts_the_owner_allows(
        running: Running) -> None:
    hook = ThreadingHTTPServer(("127.0.0.1", 0), _Pushed)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{hook.server_port}/hook"
    try:
        async with a2a(running, "claude", "gemini") as client:
            task = await send(client, "push me")
            config = TaskPushNotificationConfig(task_id=task.id, url=url, token="tok")
            with pytest.raises(PushNotificationNotSupportedError):  # none allowed yet
                await client.create_task_push_notification_config(config)
            configure(running, a2a={"push_hosts": ["example.org"]})
            with pytest.raises(Exception, match="hosts the owner allows"):
                await client.create_task_push_notification_config(config)
            configure(running, a2a={"push_hosts": [f"127.0.0.1:{hook.server_port}"]})
            kept = await client.create_task_push_notification_config(config)
            assert kept.url == url and kept.id
            await asyncio.to_thread(running.box("gemini").reply, task.id, "pushed")
            await until(lambda: any("statusUpdate" in b for _, b in _Pushed.got))
            token, update = next((t, b) for t, b in _Pushed.got if "statusUpdate" in b)
            assert token == "tok"
            assert update["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        hook.shutdown()
        hook.server_close()


def configure(running: Running, **keys: Any) -> None:
    running.store.update_config(lambda config: config.update(keys) is None)


async def until(condition: Any, seconds: float = 30.0) -> None:
    """Wait for ``condition()`` (generously: the machine may be loaded)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)
