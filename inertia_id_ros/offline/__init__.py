"""What the offline runs share: the plausibility rules and their findings, held-out validation,
the replay of a log through a session, reports."""
