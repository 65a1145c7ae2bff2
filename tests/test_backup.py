"""Backup and restore through the real CLI: identical round trips, checksums refused
when changed, a non-empty target refused unless --merge, a backup taken while eight
processes send, and across stores (files -> PostgreSQL -> files)."""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox
from mailslot.core.message import from_bytes
from mailslot.wake.claims import Queue, notifier_queue
from pgcluster import Cluster
from support import WORKERS, put_config, run_cli
from workers import body_for

Box = Callable[[str | None], Mailbox]


def mail(box: Box) -> None:
    first = box("claude").send(["gemini", "codex"], "Plan: ünïcode", "line one\n---\nend")
    box("gemini").reply(first.id, "agreed")
    news = box("sarah").broadcast("Freeze", "no deploys")
    box("codex").read(news.id)
    old = box("sarah").broadcast("Old", "gone")
    box("sarah").retract(old.id)
    put_config(box("claude").store, {"owner": "sarah", "custom": {"kept": True}})


def tree(root: Path) -> dict[str, bytes]:
    """What a restore must reproduce: every message, seen set, event and the config."""
    keep = ("agents/", "broadcast/", "log/", "config.json")
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and str(p.relative_to(root)).startswith(keep)}


def test_backup_then_restore_into_an_empty_folder_is_identical(
        cli: Callable[..., Any], box: Box, root: Path, tmp_path: Path) -> None:
    mail(box)
    backup = tmp_path / "mail.tar.gz"
    made = cli("backup", str(backup))
    assert made.code == 0, made.err
    assert "2 messages" in made.out and "2 broadcasts" in made.out
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    with tarfile.open(backup) as tar:  # plain tar can read it, manifest last
        names = tar.getnames()
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
    assert names[-1] == "manifest.json"
    assert set(manifest["files"]) == set(names[:-1])
    assert manifest["format"] == "mailslot-backup/1" and manifest["source"] == "files"
    again = cli("backup", str(backup))
    assert again.code == 2 and "never overwrites" in again.err

    restored = tmp_path / "restored"
    done = cli("restore", str(backup), "--into", str(restored))
    assert done.code == 0, done.err
    assert tree(restored) == tree(root)
    assert stat.S_IMODE(restored.stat().st_mode) == 0o700
    reader = Mailbox(FileStore(restored), box("codex").identity)
    assert "Plan: ünïcode" in [i.message.subject for i in reader.inbox()]


def test_restore_refuses_a_non_empty_target_and_merges_idempotently(
        cli: Callable[..., Any], box: Box, root: Path, tmp_path: Path) -> None:
    mail(box)
    backup = tmp_path / "mail.tar.gz"
    assert cli("backup", str(backup)).code == 0
    target = tmp_path / "other"
    mine = Mailbox(FileStore(target), box("claude").identity).send(["gemini"], "Mine", "x")
    before = tree(target)
    refused = cli("restore", str(backup), "--into", str(target))
    assert refused.code == 1 and "--merge" in refused.err
    assert tree(target) == before  # nothing written
    merged = cli("restore", str(backup), "--into", str(target), "--merge")
    assert merged.code == 0, merged.err
    after = tree(target)
    for name, data in before.items():  # never overwritten
        if not name.startswith("log/"):
            assert after[name] == data
    assert f"agents/gemini/new/{mine.id}.md" in after
    assert set(tree(root)) - set(after) <= {"log/events.jsonl"}  # the log: the target's own
    twice = cli("restore", str(backup), "--into", str(target), "--merge")
    assert twice.code == 0 and "nothing to restore" in twice.out
    assert tree(target) == after


def _rewrite(backup: Path, change: Callable[[str, bytes], bytes]) -> None:
    """Rebuild the tar with ``change`` applied to each member (the manifest kept)."""
    with tarfile.open(backup) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar]  # type: ignore[union-attr]
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for member, data in members:
            data = change(member.name, data)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    backup.write_bytes(out.getvalue())


def test_a_changed_backup_is_refused_and_nothing_is_written(
        cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    mail(box)
    backup = tmp_path / "mail.tar.gz"
    assert cli("backup", str(backup)).code == 0
    _rewrite(backup, lambda name, data: data.replace(b"agreed", b"refused")
             if name.endswith(".md") else data)
    target = tmp_path / "restored"
    refused = cli("restore", str(backup), "--into", str(target))
    assert refused.code == 1 and "fails its checksum" in refused.err
    assert len(refused.err.splitlines()) == 1
    assert not target.exists()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(gzip.compress(gzip.decompress(backup.read_bytes())[:1500]))
    broken = cli("restore", str(cut), "--into", str(target))
    assert broken.code == 1 and "refused" in broken.err and not target.exists()
    stranger = tmp_path / "stranger.tar.gz"
    with tarfile.open(stranger, "w:gz") as tar:
        info = tarfile.TarInfo("../../etc/evil")
        tar.addfile(info, io.BytesIO(b""))
    assert cli("restore", str(stranger), "--into", str(target)).code == 1
    assert not target.exists()


def test_a_backup_taken_while_eight_processes_send_has_no_torn_message(
        root: Path, tmp_path: Path, box: Box) -> None:
    for name in ("gemini", "codex", "cursor", "copilot", "grok", "sarah", "reviewer"):
        box("claude").send([name], "first", "before the senders")
    agents = ["claude", "gemini", "codex", "cursor", "copilot", "grok", "sarah", "reviewer"]
    outs = [tmp_path / f"sent-{a}" for a in agents]
    senders = [subprocess.Popen([sys.executable, str(WORKERS), "send", str(root), agent,
                                 "-1", str(seed), str(out), *agents, "all"])
               for seed, (agent, out) in enumerate(zip(agents, outs, strict=True))]
    try:
        while sum(o.exists() and o.stat().st_size > 0 for o in outs) < len(outs):
            assert all(s.poll() is None for s in senders), "a sender stopped"
            time.sleep(0.05)
        promised = {line.split()[0] for o in outs for line in o.read_text().splitlines()}
        backup = tmp_path / "mail.tar.gz"
        made = run_cli("backup", str(backup), "--dir", str(root))
    finally:
        for sender in senders:
            sender.terminate()
        for sender in senders:
            sender.wait(timeout=30)
    assert made.returncode == 0, made.stderr
    restored = tmp_path / "restored"
    assert run_cli("restore", str(backup), "--into", str(restored)).returncode == 0
    copies: dict[str, set[str]] = {}
    for path in (restored / "agents").glob("*/*/*.md"):
        message = from_bytes(path.read_bytes(), name=path.stem)  # whole, or this raises
        if message.subject != "first":
            sender, seq, lines = message.subject.split()
            assert message.body == body_for(sender, int(seq), int(lines))
        copies.setdefault(path.stem, set()).add(path.parts[-3])
        copies.setdefault(f"to:{path.stem}", set(message.to))
    directed = {k for k in copies if not k.startswith("to:")}
    assert directed, "the backup holds no mail"
    for message_id in directed:  # every recipient's copy, never some of them
        assert copies[message_id] == copies[f"to:{message_id}"], message_id
    casts = {p.stem for p in (restored / "broadcast").glob("*/*.md")}
    assert promised <= directed | casts  # what was sent before the backup began is in it


@pytest.mark.heavy
def test_a_file_backup_restores_into_postgresql_and_back(
        cli: Callable[..., Any], box: Box, root: Path, tmp_path: Path,
        pg_cluster: Cluster) -> None:
    mail(box)
    backup = tmp_path / "files.tar.gz"
    assert cli("backup", str(backup)).code == 0
    url = pg_cluster.new_database()
    into = run_cli("restore", str(backup), "--into", url)
    assert into.returncode == 0, into.stderr
    from_pg = tmp_path / "pg.tar.gz"
    made = run_cli("backup", str(from_pg), "--store", url, "--json")
    assert made.returncode == 0, made.stderr
    with tarfile.open(from_pg) as tar:
        assert json.load(tar.extractfile("manifest.json"))["source"] == "postgresql"  # type: ignore[arg-type]
    back = tmp_path / "back"
    assert run_cli("restore", str(from_pg), "--into", str(back)).returncode == 0
    mine, theirs = tree(root), tree(back)
    messages = {k for k in mine if k.startswith(("agents/", "broadcast/"))}
    assert {k: mine[k] for k in messages} == {k: theirs[k] for k in messages}
    assert json.loads(theirs["config.json"]) == json.loads(mine["config.json"])
    again = run_cli("restore", str(backup), "--into", url, "--merge")
    assert again.returncode == 0 and "nothing to restore" in again.stdout
    assert os.listdir(back)


def test_a_delivery_half_done_when_listed_is_waited_for(root: Path, tmp_path: Path) -> None:
    """A message seen in one recipient's mailbox but not yet in the other's: the backup
    looks again until the delivery has finished, and holds both copies."""
    import threading

    from mailslot.core.message import Message
    from mailslot.keep.backup import backup

    store = FileStore(root)
    message = Message(id="2026-09-21_144808.123456_claude_to_codex+1_7f3a9c2e",
                      date="2026-09-21T14:48:08+00:00", sender="claude",
                      to=("codex", "gemini"), subject="Half way", body="x")
    store.deliver(message, ["codex"])  # gemini's copy is still to come
    late = threading.Timer(0.3, lambda: store.deliver(message, ["gemini"]))
    late.start()
    out = tmp_path / "mail.tar.gz"
    backup(store, str(out))
    late.join()
    with tarfile.open(out) as tar:
        names = tar.getnames()
    assert f"agents/codex/new/{message.id}.md" in names
    assert f"agents/gemini/new/{message.id}.md" in names


def everything(cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    """A mailbox holding every kind of file a backup carries, not only mail."""
    mail(box)
    assert cli("agent", "add", "dana", "--yes", "--credential-file",
               str(tmp_path / "dana.cred")).code == 0  # a registration
    assert cli("--agent", "claude", "gate", "on").code == 0
    assert cli("--agent", "gemini", "join", "claude", "--note", "may I?").code == 0
    assert cli("--agent", "claude", "admit", "gemini").code == 0  # a notice, members
    from mailslot.store.records import WakeEntry

    up = box("codex").send(["gemini"], "Up", "wake up")
    store = box("codex").store
    Queue(store).enqueue(WakeEntry(up.id, "gemini"))  # a queued wake
    notifier_queue(store, 0).enqueue(WakeEntry(up.id, "codex"))  # a queued notice


def _with_member(backup: Path, name: str, data: bytes) -> None:
    """The backup with one more member, its checksum in the manifest, so that only the
    path can give it away."""
    import hashlib

    with tarfile.open(backup) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar]  # type: ignore[union-attr]
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        extra = tarfile.TarInfo(name)
        extra.size = len(data)
        tar.addfile(extra, io.BytesIO(data))
        for member, content in members:
            if member.name == "manifest.json":
                manifest = json.loads(content)
                manifest["files"][name] = hashlib.sha256(data).hexdigest()
                content = json.dumps(manifest).encode()
                member.size = len(content)
            tar.addfile(member, io.BytesIO(content))
    backup.write_bytes(out.getvalue())


def test_a_backup_of_every_kind_of_file_restores_and_counts_what_it_did(
        cli: Callable[..., Any], box: Box, root: Path, tmp_path: Path) -> None:
    everything(cli, box, tmp_path)
    backup = tmp_path / "mail.tar.gz"
    assert cli("backup", str(backup)).code == 0
    with tarfile.open(backup) as tar:
        names = [n for n in tar.getnames() if n != "manifest.json"]
    assert any(n.startswith("gates/") for n in names)
    assert any(n.startswith("registry/") for n in names)
    assert any(n.startswith("wake/") for n in names)
    restored = tmp_path / "restored"
    done = cli("restore", str(backup), "--into", str(restored), "--json")
    assert done.code == 0, done.err
    counts = json.loads(done.out)["counts"]
    copies = [n for n in names if n.startswith("agents/")]
    assert counts["files"] == len(names)
    assert counts["copies"] == len(copies)
    assert counts["messages"] == len({n.rsplit("/", 1)[1] for n in copies})
    assert counts["broadcasts"] == 2 and counts["registrations"] == 1
    assert tree(restored) == tree(root)


@pytest.mark.parametrize("name", ["evil.sh", "tmp/junk", "index/search.sqlite",
                                  "agents/claude/new/evil.sh", "agents/claude/tmp/x.md",
                                  "presence/claude/k.json", "../x", "/etc/evil",
                                  "agents/../../x", "broadcast/seen/Claude"])
def test_restore_refuses_a_path_the_mailbox_layout_has_not(
        name: str, cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    mail(box)
    backup = tmp_path / "mail.tar.gz"
    assert cli("backup", str(backup)).code == 0
    _with_member(backup, name, b"#!/bin/sh\necho owned\n")
    target = tmp_path / "restored"
    refused = cli("restore", str(backup), "--into", str(target))
    assert refused.code == 1 and "which no mailbox holds" in refused.err, refused.err
    assert len(refused.err.splitlines()) == 1
    assert not target.exists()
    merged = tmp_path / "merge"
    Mailbox(FileStore(merged), box("claude").identity).send(["gemini"], "Mine", "x")
    before = tree(merged)
    assert cli("restore", str(backup), "--into", str(merged), "--merge").code == 1
    assert tree(merged) == before


def test_restore_has_an_archive_wide_size_limit(cli: Callable[..., Any], box: Box,
                                                tmp_path: Path) -> None:
    mail(box)
    backup = tmp_path / "mail.tar.gz"
    assert cli("backup", str(backup)).code == 0
    with tarfile.open(backup) as tar:
        size = sum(m.size for m in tar if m.name != "manifest.json")
    target = tmp_path / "restored"
    small = cli("restore", str(backup), "--into", str(target), "--max-bytes",
                str(size // 2))
    assert small.code == 1 and "unpacks to more than" in small.err, small.err
    assert len(small.err.splitlines()) == 1 and not target.exists()
    from mailslot.keep import backup as backups

    assert backups.MAX_ARCHIVE_BYTES == 8 << 30  # the default docs/keep.md states
    fits = cli("restore", str(backup), "--into", str(target), "--max-bytes",
               str(size * 2))
    assert fits.code == 0, fits.err


@pytest.mark.parametrize("name, data", [
    ("config.json", b"[" * 100_000 + b"]" * 100_000),  # RecursionError
    ("config.json", b'["not", "an", "object"]'),
    ("agents/claude/new/2026-09-21_144808.123456_claude_to_gemini_7f3a9c0e.md",
     b"---\nid: x\nfrom: &a claude\nto: [*a]\n---\nalias\n"),
    ("agents/claude/new/2026-09-21_144808.123456_claude_to_gemini_7f3a9c0e.md",
     b"---\nid: 2026-09-21_144808.123456_claude_to_gemini_7f3a9c0f\ndate: d\nfrom: a\n"
     b"to: [b]\nsubject: s\n---\nanother id\n"),
    ("agents/claude/new/2026-09-21_144808.123456_claude_to_gemini_7f3a9c0e.md",
     b"---\nid: 2026-09-21_144808.123456_claude_to_gemini_7f3a9c0e\ndate: d\nfrom: a\n"
     b"to: [b]\nsubject: s\n---\na NUL \x00 byte\n"),
])
def test_restore_refuses_a_file_that_is_not_what_its_path_says(
        name: str, data: bytes, cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    box("claude").send(["gemini"], "Plan", "x")
    backup = tmp_path / "mail.tar.gz"
    assert cli("backup", str(backup)).code == 0
    _with_member(backup, name, data)  # the mailbox had no config: the only one
    target = tmp_path / "restored"
    refused = cli("restore", str(backup), "--into", str(target))
    assert refused.code == 1 and refused.err.startswith("mailslot: error: "), refused.err
    assert len(refused.err.splitlines()) == 1 and "nothing was restored" in refused.err
    assert not target.exists()


def _zeros_backup(path: Path, name: str, size: int) -> None:
    """A backup holding one file of ``size`` zero bytes (packed to about a thousandth
    of that, written streaming), its checksum in the manifest: only its size gives it
    away."""
    import hashlib

    class Zeros(io.RawIOBase):
        def __init__(self) -> None:
            self.left = size

        def readinto(self, buffer: Any) -> int:
            n = min(len(buffer), self.left)
            buffer[:n] = bytes(n)
            self.left -= n
            return n

    digest = hashlib.sha256()
    for _ in range(size >> 20):
        digest.update(bytes(1 << 20))
    with tarfile.open(path, mode="w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo(name)
        info.size = size
        tar.addfile(info, Zeros())
        manifest = json.dumps({"format": "mailslot-backup/1",
                               "files": {name: digest.hexdigest()}}).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))


def test_a_backup_bomb_is_refused_before_it_is_unpacked_in_bounded_memory(
        tmp_path: Path) -> None:
    """150 MB of zeros packed into 150 KB: past 100 times the backup's size and 64
    MiB, refused by its declared size before a byte of it is unpacked."""
    from support import run_measured

    bomb = tmp_path / "bomb.tar.gz"
    _zeros_backup(bomb, "log/events.jsonl", 150 << 20)
    assert bomb.stat().st_size < 1 << 20
    target = tmp_path / "restored"
    code, err, rss, took = run_measured("restore", str(bomb), "--into", str(target))
    assert (code, err.count("\n")) == (1, 1), err
    assert "unpacks to more than 100 times its size" in err
    assert rss < 110 << 10 and took < 60, (rss, took)
    assert not target.exists() and list(tmp_path.glob(".restored*")) == []


def test_a_message_file_past_the_send_limit_is_refused_unread(
        cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    box("claude").send(["gemini"], "Plan", "x")
    backup = tmp_path / "mail.tar.gz"
    assert cli("backup", str(backup)).code == 0
    name = "agents/gemini/done/2026-09-21_144808.123456_claude_to_gemini_7f3a9c0e.md"
    header = (b"---\nid: 2026-09-21_144808.123456_claude_to_gemini_7f3a9c0e\n"
              b"date: '2026-09-21T14:48:08+00:00'\nfrom: claude\nto: [gemini]\n"
              b"subject: big\n---\n")
    _with_member(backup, name, header + b"z" * (3 << 20) + b"\n")  # a valid message
    target = tmp_path / "restored"
    refused = cli("restore", str(backup), "--into", str(target))
    assert refused.code == 1, refused.err
    assert "larger than a message (max_body_bytes) may be" in refused.err
    assert not target.exists()


@pytest.mark.parametrize("command", ["migrate", "restore"])
def test_a_folder_of_other_files_is_never_filled_with_a_mailbox_unless_asked(
        cli: Callable[..., Any], box: Box, root: Path, tmp_path: Path, command: str) -> None:
    box("claude").send(["gemini"], "Plan", "x")
    backup = tmp_path / "mail.tar.gz"
    assert cli("backup", str(backup)).code == 0
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("mine\n")
    argv = ["migrate", "--from", str(root), "--to", str(project)] if command == "migrate" \
        else ["restore", str(backup), "--into", str(project), "--merge"]
    refused = cli(*argv)
    assert refused.code == 1, refused.err
    assert refused.err == (f"mailslot: error: {project} is a folder that is not a mailbox; "
                           "nothing was written: give a new or empty folder, or add --init "
                           "to make this one a mailbox\n")
    assert sorted(os.listdir(project)) == ["notes.txt"]
    made = cli(*argv, "--init")
    assert made.code == 0, made.err
    assert FileStore(project).state_of("gemini", FileStore(root).entries(
        "gemini", ("unread",))[0][0]) == "unread"
    new = tmp_path / "new"  # a folder that is not there yet, or empty, needs no --init
    fresh = ["migrate", "--from", str(root), "--to", str(new)] if command == "migrate" \
        else ["restore", str(backup), "--into", str(new)]
    assert cli(*fresh).code == 0
