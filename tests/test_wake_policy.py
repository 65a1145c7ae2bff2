"""Who may be woken and how often: config.json read with fail-closed rules."""

from __future__ import annotations

from typing import Any

import pytest

from mailslot.core.config import Config
from mailslot.core.errors import StoreError
from mailslot.core.message import Message
from mailslot.wake.policy import Retry, refusal, settings_for


def settings(agent: dict[str, Any], **top: Any) -> Any:
    return settings_for(Config({"agents": {"gemini": agent}, **top}), "gemini")


def message(delivery: str = "inbox") -> Message:
    return Message(id="x", date="d", sender="claude", to=("gemini",), subject="s",
                   delivery=delivery)  # type: ignore[arg-type]


def test_wake_on_mail_true_wakes_for_every_directed_message() -> None:
    s = settings({"wake_on_mail": True, "wake_method": "command"})
    assert refusal(s, message()) is None
    assert refusal(s, message("wake")) is None


def test_requested_wakes_only_when_the_message_asks() -> None:
    s = settings({"wake_on_mail": "requested", "wake_method": "command"})
    assert refusal(s, message("wake")) is None
    assert "did not ask for a wake" in str(refusal(s, message()))


def test_a_message_cannot_wake_an_agent_that_did_not_opt_in() -> None:
    for agent in ({}, {"wake_on_mail": False, "wake_method": "command"}):
        assert "does not allow wakes" in str(refusal(settings(agent), message("wake")))


def test_unsupported_host_is_reported_as_such() -> None:
    s = settings({"wake_on_mail": True, "wake_method": "unsupported"})
    assert "cannot be woken" in str(refusal(s, message("wake")))


@pytest.mark.parametrize(("agent", "field"), [
    ({"wake_on_mail": "yes", "wake_method": "command"}, "agents.gemini.wake_on_mail"),
    ({"wake_on_mail": 1, "wake_method": "command"}, "agents.gemini.wake_on_mail"),
    ({"wake_on_mail": True}, "agents.gemini.wake_method"),
    ({"wake_on_mail": True, "wake_method": 3}, "agents.gemini.wake_method"),
    ({"wake_on_mail": True, "wake_method": "command", "wake_retry": {"attempts": 0}},
     "agents.gemini.wake_retry.attempts"),
    ({"wake_on_mail": True, "wake_method": "command", "wake_retry": {"attempts": 2.5}},
     "agents.gemini.wake_retry.attempts"),
    ({"wake_on_mail": True, "wake_method": "command", "wake_retry": {"backoff_seconds": -1}},
     "agents.gemini.wake_retry.backoff_seconds"),
    ({"wake_on_mail": True, "wake_method": "command", "wake_retry": {"jitter": 1}},
     "agents.gemini.wake_retry.jitter"),
    ({"wake_on_mail": True, "wake_method": "command", "wake_retry": []},
     "agents.gemini.wake_retry"),
])
def test_malformed_values_fail_closed_naming_the_field(agent: dict[str, Any], field: str) -> None:
    with pytest.raises(StoreError, match=field.replace(".", r"\.")):
        settings(agent)


def test_retry_defaults_double_from_five_seconds() -> None:
    retry = settings({"wake_on_mail": True, "wake_method": "command"}).retry
    assert retry == Retry(attempts=3, backoff_seconds=5, backoff_factor=2, timeout_seconds=600)
    assert [retry.delay_after(n) for n in (1, 2)] == [5, 10]
    assert retry.describe().startswith("3 attempts, waiting 5 s then 10 s")


def test_retry_is_configurable_globally_and_per_agent() -> None:
    s = settings({"wake_on_mail": True, "wake_method": "command",
                  "wake_retry": {"attempts": 4}},
                 wake_retry={"backoff_seconds": 0.5, "attempts": 2})
    assert s.retry == Retry(attempts=4, backoff_seconds=0.5)
