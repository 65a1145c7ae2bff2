"""``mailslot relay``: mail to a remote A2A agent the owner named, and its answer back as
mail (docs/a2a.md, "mailslot as an A2A client").

The owner names each remote agent in config.json::

    {"a2a": {"remotes": {"reviewer": {"url": "https://host/a2a/NAME",
                                      "token_file": "~/.config/mailslot/reviewer.token"}}}}

``reviewer`` is then an agent of this mailbox like any other: mail to it is stored in
its inbox, through every rule of a send. The relay (run by the watcher, or ``mailslot
relay``) takes each unread message there, sends it to the remote agent with the
official ``a2a-sdk`` client (its text as the message, its subject in the metadata, the
bearer secret from ``token_file``: a file of this user's no one else may read, holding
the secret or a mailslot credential), records the remote task and marks the message
read. When the remote task ends, its answer is the remote name's **reply** to the
message (so it lands in the sender's inbox, in the thread, the original marked done):
the completed task's text, or one line saying it was rejected, failed or canceled.
The reply is ordinary mail: the loop governor and gates apply, and a model is shown it
framed as untrusted data, as every message. A remote's answer can do nothing else.

State lives in the mailbox: a message sent but unanswered is the remote name's read
mail, its remote task in the events log (``a2a_sent``), so a relay that stops and starts
again picks up where it was; one that stops between sending and recording sends that
message again (at least once, never lost).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any, TextIO

from ..access.identity import Identity
from ..core import jsontext
from ..core.errors import InvalidInput, MailslotError, StoreError
from ..core.names import check_name
from ..service.mailbox import Mailbox
from ..store import Store

SENT = "a2a_sent"
"""The receipt of a relayed message: ``{"event", "id", "agent", "task", "url"}``."""
POLL_SECONDS = 5.0
TIMEOUT_SECONDS = 30.0
TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED")


class Remote:
    """One remote agent as the owner named it: its local name, URL and secret file."""

    def __init__(self, name: str, url: str, token_file: str, credential: str | None) -> None:
        self.name = name
        self.url = url
        self.token_file = token_file
        self.credential = credential  # a local credential to write as the name, if any

    def secret(self) -> str:
        """The bearer secret: the file's text, or a credential file's ``secret``."""
        from ..wake.line_socket import DoorError, own_file

        try:
            raw = own_file(os.path.expanduser(self.token_file), private=True, limit=8192)
        except DoorError as exc:
            raise StoreError(f"a2a.remotes.{self.name}.token_file: {exc}") from None
        text = raw.decode("utf-8", "replace").strip()
        try:
            held = jsontext.loads(text)
        except ValueError:
            held = None
        secret = held.get("secret") if isinstance(held, dict) else text
        if not isinstance(secret, str) or not secret:
            raise StoreError(f"a2a.remotes.{self.name}.token_file holds no secret")
        return secret


def remotes(config: Mapping[str, Any]) -> list[Remote]:
    """The remotes config.json names (``a2a.remotes``); a malformed entry is an error
    naming it (fail closed: nothing is relayed)."""
    section = config.get("a2a") if isinstance(config, Mapping) else None
    named = section.get("remotes", {}) if isinstance(section, dict) else {}
    if not isinstance(named, dict):
        raise StoreError("config.json: a2a.remotes must be an object of names")
    found = []
    for name, entry in sorted(named.items()):
        where = f"config.json: a2a.remotes.{name}"
        try:
            check_name(name, "remote agent")
        except InvalidInput as exc:
            raise StoreError(f"{where}: {exc}") from None
        url = entry.get("url") if isinstance(entry, dict) else None
        token = entry.get("token_file") if isinstance(entry, dict) else None
        credential = entry.get("credential") if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise StoreError(f"{where}.url must be the agent's http(s) URL")
        if not isinstance(token, str) or not token:
            raise StoreError(f"{where}.token_file must name the file of its secret")
        if credential is not None and not isinstance(credential, str):
            raise StoreError(f"{where}.credential must be a credential file's path")
        found.append(Remote(name, url.rstrip("/"), token, credential))
    return found


class Relay:
    """Relays every remote's mail, a pass at a time (:meth:`step`)."""

    def __init__(self, store: Store, out: TextIO | None = None) -> None:
        self.store = store
        self.out = out or sys.stdout
        self.tasks: dict[str, str] = {}  # message id → remote task id (from the log)
        self._loaded = False

    def say(self, line: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} relay: {line}", file=self.out, flush=True)

    def box(self, remote: Remote) -> Mailbox:
        """The mailbox of the remote's local name (its credential, where one is set)."""
        if remote.credential is not None:
            return Mailbox.open(self.store.address, credential=remote.credential)
        return Mailbox(self.store, Identity(remote.name, "a2a"))

    async def step(self) -> int:
        """One pass over every remote: send its unread mail, collect finished answers;
        how many messages moved."""
        if not self._loaded:
            self._load()
        moved = 0
        for remote in remotes(self.store.load_config()):
            try:
                moved += await self._relay(remote)
            except (MailslotError, OSError) as exc:
                self.say(f"{remote.name}: {exc}")
        return moved

    def _load(self) -> None:
        """The remote tasks of messages relayed before (the events log)."""
        for event in self.store.events():
            if event.get("event") == SENT and isinstance(event.get("task"), str):
                self.tasks[str(event.get("id"))] = str(event["task"])
        self._loaded = True

    async def _relay(self, remote: Remote) -> int:
        import httpx
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

        box = self.box(remote)
        waiting = box.store.entries(remote.name, ("unread", "read"))
        if not waiting:
            return 0
        headers = {"Authorization": f"Bearer {remote.secret()}"}
        moved = 0
        async with httpx.AsyncClient(headers=headers, timeout=TIMEOUT_SECONDS,
                                     follow_redirects=False) as http:
            card = await A2ACardResolver(http, remote.url).get_agent_card()
            client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
            try:
                for message_id, state in sorted(waiting):
                    moved += await self._one(box, remote, client, message_id, state)
            finally:
                await client.close()
        return moved

    async def _one(self, box: Mailbox, remote: Remote, client: Any, message_id: str,
                   state: str) -> int:
        task = self.tasks.get(message_id)
        if task is None:  # unread, or read by a relay that stopped before recording it
            await self._send(box, remote, client, message_id)
            return 1
        return await self._collect(box, remote, client, message_id, task)

    async def _send(self, box: Mailbox, remote: Remote, client: Any, message_id: str) -> None:
        from a2a.types import (
            Message,
            Part,
            Role,
            SendMessageConfiguration,
            SendMessageRequest,
        )

        message = box.read(message_id, mark=False).message
        request = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()),
                          context_id=message.thread or message.id,
                          parts=[Part(text=message.body)])
        request.metadata.update({"subject": message.subject, "from": message.sender})
        events = [e async for e in client.send_message(SendMessageRequest(
            message=request, configuration=SendMessageConfiguration(return_immediately=True)))]
        kind = events[-1].WhichOneof("payload") if events else None
        if kind != "task":  # a direct message answer: the task is done already
            text = _text(events[-1].message.parts) if kind == "message" else ""
            self._answer(box, remote, message_id, text or "(an empty answer)")
            return
        task = events[-1].task
        box._event(SENT, message_id, durable=True, task=task.id, url=remote.url)
        self.tasks[message_id] = task.id
        box.mark_read(message_id)
        self.say(f"{message.sender} -> {remote.name}: {message_id} sent as task {task.id}")
        await self._finish(box, remote, message_id, task)

    async def _collect(self, box: Mailbox, remote: Remote, client: Any, message_id: str,
                       task_id: str) -> int:
        from a2a.types import GetTaskRequest

        task = await client.get_task(GetTaskRequest(id=task_id))
        return await self._finish(box, remote, message_id, task)

    async def _finish(self, box: Mailbox, remote: Remote, message_id: str, task: Any) -> int:
        """Answer the message when the remote task has ended; 1 if it did."""
        from a2a.types import TaskState

        state = TaskState.Name(task.status.state)
        if state not in TERMINAL:
            return 0
        said = _text(task.status.message.parts) or "".join(
            _text(a.parts) for a in task.artifacts)
        if state != "TASK_STATE_COMPLETED":
            said = (f"The remote A2A agent {remote.name} ({remote.url}) ended the task "
                    f"{state.removeprefix('TASK_STATE_').lower()}"
                    + (f": {said}" if said else "."))
        self._answer(box, remote, message_id, said or "(an empty answer)")
        return 1

    def _answer(self, box: Mailbox, remote: Remote, message_id: str, text: str) -> None:
        reply = box.reply(message_id, text)
        self.tasks.pop(message_id, None)
        self.say(f"{remote.name} -> {reply.to[0]}: answer {reply.id} to {message_id}")

    def run(self, once: bool = False) -> int:
        """Until SIGTERM or Ctrl-C (``once``: one pass): a pass whenever a remote's
        mailbox may have changed, and every :data:`POLL_SECONDS` for answers."""
        import signal

        stop = threading.Event()
        kicked = threading.Event()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
        watching = None if once else self.store.watch_mail(kicked.set)
        try:
            while not stop.is_set():
                try:
                    asyncio.run(self.step())
                except (MailslotError, OSError) as exc:
                    self.say(str(exc))
                if once:
                    return 0
                kicked.wait(POLL_SECONDS)
                kicked.clear()
        except KeyboardInterrupt:
            pass
        finally:
            if watching is not None:
                watching.close()
        return 0


def _text(parts: Any) -> str:
    return "\n\n".join(p.text for p in parts if p.WhichOneof("content") == "text")


def start_relay(store: Store, config: Mapping[str, Any], out: TextIO) -> list[Any]:
    """``mailslot relay`` as a child of the watcher, when config.json names a remote."""
    import subprocess

    from ..backends import handed_over
    from ..mail.watchers import relays_named

    if not relays_named(config):
        return []
    named, told = handed_over(store)
    argv = [sys.executable, "-m", "mailslot", *named, "relay"]
    env = {**os.environ, **told}
    try:
        return [subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, env=env)]
    except (AttributeError, OSError, ValueError):  # out has no file: inherit stdout
        return [subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env)]
