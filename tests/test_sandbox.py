"""Telling a sandboxed process from an ordinary one: real namespaces (``unshare``, as
root here) and a real seccomp filter, each asked of a fresh process."""

from __future__ import annotations

import subprocess
import sys

import pytest

ASK = "from mailslot.core.sandbox import sandboxed; print(sandboxed())"

FILTERED = """
import ctypes, os, struct, sys
# one BPF instruction: return SECCOMP_RET_ALLOW (a filter that changes nothing but is one)
code = struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000)
buf = ctypes.create_string_buffer(code, len(code))
prog = struct.pack("HxxxxxxQ", 1, ctypes.addressof(buf))
prctl = ctypes.CDLL(None, use_errno=True).prctl
assert prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
arg = ctypes.create_string_buffer(prog, len(prog))
assert prctl(22, 2, ctypes.c_void_p(ctypes.addressof(arg)), 0, 0) == 0  # SECCOMP_MODE_FILTER
os.execv(sys.executable, [sys.executable, "-c", sys.argv[1]])
"""


def ask(*before: str) -> str:
    done = subprocess.run([*before, sys.executable, "-c", ASK], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.strip()


def test_an_ordinary_process_is_no_sandbox() -> None:
    assert ask() == "None"


@pytest.mark.parametrize(("unshare", "said"), [
    (["--net"], "its network namespace is not that of pid "),
    (["--mount"], "its mount namespace is not that of pid "),
    (["--user", "--map-root-user", "--net"], "its user id namespace is not that of pid "),
    (["--pid", "--fork"], "its process ids are not those /proc shows"),
    (["--uts"], "its host name namespace is not that of pid "),
])
def test_a_process_in_namespaces_of_its_own_is_a_sandbox(unshare: list[str], said: str) -> None:
    assert ask("unshare", *unshare, "--").startswith(said)


def test_a_process_under_a_seccomp_filter_its_parent_has_not_is_a_sandbox() -> None:
    done = subprocess.run([sys.executable, "-c", FILTERED, ASK], capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.strip().startswith("it has a seccomp filter that pid ")
