"""Starting agent sessions under the owner's guardrails (``mailslot start``)."""
