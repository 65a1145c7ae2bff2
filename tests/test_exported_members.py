"""The package's public API is a short, sorted, deliberate list, guarded here."""

from __future__ import annotations

import types

import mailslot

INTENDED = [
    "AgentInfo",
    "DoctorReport",
    "FileStore",
    "IdTaken",
    "InvalidInput",
    "Item",
    "Mailbox",
    "MailslotError",
    "Message",
    "NoIdentity",
    "NotFound",
    "RecipientStatus",
    "Refused",
    "Status",
    "Store",
    "StoreError",
    "Unreadable",
    "UnsafePath",
    "add_mailbox_tools",
    "open_store",
]


def test_all_is_exactly_what_we_intend_and_sorted() -> None:
    assert mailslot.__all__ == INTENDED
    assert sorted(mailslot.__all__) == mailslot.__all__


def test_every_exported_member_exists_and_comes_from_the_package() -> None:
    for name in mailslot.__all__:
        member = getattr(mailslot, name)
        assert member.__module__.startswith("mailslot."), name


def test_nothing_else_public_lives_on_the_package() -> None:
    public = {
        name for name, value in vars(mailslot).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(INTENDED)


def test_errors_form_the_documented_tree() -> None:
    assert issubclass(mailslot.InvalidInput, mailslot.MailslotError)
    assert issubclass(mailslot.NoIdentity, mailslot.InvalidInput)
    for store_error in (mailslot.UnsafePath, mailslot.Unreadable, mailslot.IdTaken):
        assert store_error.__bases__ == (mailslot.StoreError,)  # exit 1: the mailbox is wrong
    for leaf in (mailslot.NotFound, mailslot.Refused, mailslot.StoreError):
        assert leaf.__bases__ == (mailslot.MailslotError,)
