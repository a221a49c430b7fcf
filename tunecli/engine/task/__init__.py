"""Config spaces, tasks and dispatch contexts: the tuning core that needs no compiler."""
