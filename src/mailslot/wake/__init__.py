"""Waking agents when mail arrives: only where the recipient's config opts in.

Service level (no host programs run): :mod:`.policy` (who may be woken, retry policy),
:mod:`.queue` (what gets queued at delivery; the wake log), :mod:`.runner` (claim,
attempt, retry, give up). Wake methods: :mod:`.methods` (the bases and a program of your
own), :mod:`.tmux`, and each host's own (:mod:`mailslot.host_registry`), listed in
:mod:`.methods_by_name`. Front end: :mod:`.watcher` (``mailslot watch``, the only
module that imports watchdog) and :mod:`.report` (``watch --validate``).

This package's ``__init__`` imports nothing, so ``send`` pays only for :mod:`.queue`.
"""
