"""The package's layers, from the bottom up: each imports, and calls, only its own and lower
layers."""

from __future__ import annotations

LAYERS = (
    "core",
    "solvers",
    "chain",
    ("online", "motion"),
    "formats",
    "sim",
    "offline",
    "modes",
    "jobs",
    "fleet",
    "ros",
    "cli",
)
"""The packages from the bottom up (a tuple: one layer); each imports only from its own and
lower layers (and the modules beside them: errors, options, threads, msg, srv)."""


def layer_rank(package: str) -> int:
    """The rank of the package ``package`` (1: the bottom; 0: the modules beside the layers)."""
    for rank, layer in enumerate(LAYERS, start=1):
        if package == layer or package in layer:
            return rank
    return 0
