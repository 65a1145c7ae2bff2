"""The small rules every feature shares: how a new message is written, who is present,
which broadcasts an agent is still to be served, and how a model's shell runs mailslot."""
