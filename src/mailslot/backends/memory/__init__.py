"""The store in memory (:mod:`.memory_store`): one process's mailbox, for tests and as
the proof that a backend is its primitives alone."""
