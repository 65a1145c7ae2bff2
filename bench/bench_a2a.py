"""A2A on ``serve --http``: ``SendMessage`` → stored, next to MCP's ``send_message`` over the
same server in the same run.

One ``mailslot serve --http`` over a fresh mailbox; one registered sender. A2A: the
official ``a2a-sdk`` client (card resolved once, JSON-RPC binding, ``returnImmediately``),
each call timed until its answer (the task ``SUBMITTED``: the mail is stored and synced
by then). MCP: one session (raw JSON-RPC, as ``bench_http``), ``send_message`` timed
the same way. Every answer must name a stored message (a task id, a message id), and
afterwards the recipient's mailbox must hold every one of them exactly once.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)

from bench_http import Session, _serve
from common import NotDone, Row, ms, percentile, unlimited
from mailslot import FileStore
from mailslot.access import authority
from mailslot.access.credentials import read_credential

CALLS = 300
WARM = 20


async def _a2a(base: str, secret: str, calls: int) -> tuple[list[float], list[str]]:
    """``calls`` SendMessage round trips to ``peer``: their times and task ids."""
    headers = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        card = await A2ACardResolver(http, f"{base}/a2a/peer").get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        times: list[float] = []
        ids: list[str] = []
        for i in range(calls):
            request = SendMessageRequest(
                message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()),
                                parts=[Part(text=f"a2a bench {i}\n\n" + "x" * 500)]),
                configuration=SendMessageConfiguration(return_immediately=True))
            start = time.perf_counter()
            events = [e async for e in client.send_message(request)]
            times.append(time.perf_counter() - start)
            task = events[-1].task
            if task.status.state != TaskState.TASK_STATE_SUBMITTED:
                raise NotDone(f"SendMessage did not store the mail: {task.status}")
            ids.append(task.id)
        await client.close()
    return times, ids


def _mcp(url: str, secret: str, calls: int) -> tuple[list[float], list[str]]:
    session = Session(url, secret)
    times: list[float] = []
    ids: list[str] = []
    for i in range(calls):
        start = time.perf_counter()
        facts = session.call("send_message", {"to": "peer", "subject": f"mcp bench {i}",
                                              "body": "x" * 500})
        times.append(time.perf_counter() - start)
        if "id" not in facts:
            raise NotDone(f"send_message did not store the mail: {facts}")
        ids.append(str(facts["id"]))
    session.close()
    return times, ids


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mailbox"
        unlimited(root)
        store = FileStore(root)
        secret = read_credential(authority.register(
            store, "bench", path=str(Path(tmp) / "bench.json")).path).secret
        authority.register(store, "peer", path=str(Path(tmp) / "peer.json"))
        proc, url = _serve(root)
        base = url.removesuffix("/mcp")
        try:
            _mcp(url, secret, WARM)  # both paths warmed: imports, first session, caches
            asyncio.run(_a2a(base, secret, WARM))
            mcp, mcp_ids = _mcp(url, secret, CALLS)
            a2a, a2a_ids = asyncio.run(_a2a(base, secret, CALLS))
        finally:
            proc.terminate()
            proc.wait(60)
        stored = [i for i, _ in store.entries("peer", ("unread", "read", "done"))]
    everything = mcp_ids + a2a_ids
    exact = sorted(stored) == sorted(set(stored)) and set(everything) <= set(stored) \
        and len(stored) == len(everything) + 2 * WARM
    return [
        Row("A2A SendMessage → stored, p50 / p99",
            f"{ms(percentile(a2a, 50))} / {ms(percentile(a2a, 99))}",
            f"MCP send_message {ms(percentile(mcp, 50))} / {ms(percentile(mcp, 99))}",
            "informational", None),
        Row("A2A p50 / MCP p50", f"{percentile(a2a, 50) / percentile(mcp, 50):.2f}x",
            "same server, same run", "informational", None),
        Row("every answered send stored exactly once",
            f"{len(everything)} answered, {len(stored) - 2 * WARM} stored",
            "every answer stored, none twice", "exact", exact),
    ]


if __name__ == "__main__":
    from common import print_table

    print_table(run())
