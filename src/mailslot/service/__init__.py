"""The service: the mailbox every front end calls, and the delivery rules under it."""
