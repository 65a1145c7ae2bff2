"""Who may do what: authority over names, credentials, gates, fencing and instances."""
