"""The JSON API of ``serve --http`` as both ends see it: paths and how errors travel.

A :class:`~mailslot.core.errors.MailslotError` crosses the wire as ``{"error": LINE, "kind":
KIND}`` with the status below, and is raised again as the same class on the client, so
the remote CLI exits with the same code as the local one. Light: the hook path loads it.
"""

from __future__ import annotations

from ...core.errors import InvalidInput, MailslotError, NotFound, Refused, StoreError

API = "/api/"
"""Every JSON route is ``API + name``: pending, seen, send, inbox, read, done, reply."""

KINDS: dict[str, tuple[type[MailslotError], int]] = {
    "invalid": (InvalidInput, 422),
    "not_found": (NotFound, 404),
    "refused": (Refused, 409),
    "store": (StoreError, 503),
}


def checked_url(url: str) -> str:
    """``url`` when a bearer secret may be sent to it: ``https://`` anywhere, plain
    ``http://`` only to this machine (``localhost`` or a loopback address), where no one
    on the network can read the secret on the way."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"--remote {url}: expected an http:// or https:// URL")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise InvalidInput(f"--remote {url}: plain http:// sends the secret unencrypted; "
                           "use https:// (http:// only to localhost or a loopback address)")
    return url


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def error_body(exc: MailslotError) -> tuple[int, dict[str, str]]:
    """The status and JSON an error is sent as (its most specific kind)."""
    kind = next(k for k, (cls, _) in KINDS.items() if isinstance(exc, cls))
    return KINDS[kind][1], {"error": str(exc), "kind": kind}


def error_from(body: object, status: int) -> MailslotError:
    """The error a JSON answer stands for (a ``StoreError`` when it names no kind)."""
    if status == 401:
        return Refused("the server refused the credential (wrong, rotated or revoked)")
    if isinstance(body, dict) and body.get("kind") in KINDS:
        return KINDS[body["kind"]][0](str(body.get("error", "")))
    reason = body.get("error") if isinstance(body, dict) else None
    return StoreError(f"the server answered {status}" + (f": {reason}" if reason else ""))
