"""One sender of bench_pg_scale.py's team: a process of its own, like an agent on its own
machine, with its own connection to the database.

    pg_team_sender.py URL NAME COUNT GAP_MIN GAP_MAX SEED RECIPIENT...

It connects (and checks the schema) first, prints ``ready``, and waits for a line on
stdin: the common start. Then it sends COUNT messages to the recipients in turn, one
every GAP_MIN-GAP_MAX seconds (uniform, from SEED; the first after a random part of a
gap, so the team does not send in step). The times are on a schedule, not after each
send: a slow send does not slow the rate down. Each send prints one line,
``ID BEFORE AFTER`` (wall times just before ``send`` and after it returned, its commit
done), or ``error TEXT``.
"""

from __future__ import annotations

import random
import sys
import time

from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store


def main(argv: list[str]) -> int:
    url, name, count, low, high, seed, *recipients = argv
    pick = random.Random(int(seed))
    box = Mailbox(open_store(url), Identity(name, "--agent"))
    box.store.load_config()  # connected, the schema checked: no send pays for either
    print("ready", flush=True)
    sys.stdin.readline()
    due = time.monotonic() + pick.uniform(0, float(high))
    for n in range(int(count)):
        time.sleep(max(0.0, due - time.monotonic()))
        before = time.time()
        try:
            message = box.send(recipients[n % len(recipients)], f"wake {name}.{n}", "x")
        except Exception as exc:  # counted by the bench, and its row fails
            print(f"error {type(exc).__name__}: {exc}", flush=True)
        else:
            print(f"{message.id} {before!r} {time.time()!r}", flush=True)
        due += pick.uniform(float(low), float(high))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
