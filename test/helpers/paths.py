"""Repository and shared-data paths."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data(name: str) -> Path:
    """``../shared/data/<name>`` or skip the test, saying why."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(
            f"real-robot data {path} is absent (it lives beside the repository in "
            "../shared/data, which a user's clone does not have)"
        )
    return path
