"""Reproductions of published experiments (run from the ``inertia-id`` command line)."""
