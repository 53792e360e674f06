"""Types as a test: the pinned mypy (requirements-test.txt) with the pyproject.toml configuration,
on the whole package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.long_running
def test_mypy_passes_on_the_package():
    mypy = Path(sys.executable).parent / "mypy"
    if not mypy.is_file():
        pytest.skip(f"mypy is not installed next to {sys.executable} (requirements-test.txt)")
    result = subprocess.run(
        [str(mypy), "--config-file", str(REPO / "pyproject.toml"), "--no-incremental"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"mypy failed:\n{result.stdout}{result.stderr}"
