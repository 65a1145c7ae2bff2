"""Host hooks: ``mailslot hook HOST EVENT`` puts pending mail in front of an agent.

:mod:`.host_io` knows each host's input and output JSON; :mod:`.hook_entry` is the entry that
never fails a session. The rules (what is shown when) are in :mod:`mailslot.service.delivery`.
"""
