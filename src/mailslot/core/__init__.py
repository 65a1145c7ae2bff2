"""The bottom layer: values, errors, ids, names, text rules, the message format and the
config reader. Nothing here imports any other part of mailslot."""
