"""Lint as a test: the pinned ruff (requirements-test.txt) with the pyproject.toml configuration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PYPROJECT = REPO / "pyproject.toml"
REQUIRED_RULES = {"E", "W", "F", "I", "D"}


def ruff_executable() -> Path | None:
    """The ruff installed next to this interpreter (the project's .venv), or None."""
    bin_dir = Path(sys.executable).parent
    for name in ("ruff", "ruff.exe"):
        if (bin_dir / name).is_file():
            return bin_dir / name
    return None


def load_pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml needs tomli on 3.10")
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "command", [("check", "--no-cache"), ("format", "--check", "--no-cache")], ids=" ".join
)
def test_ruff_passes_on_the_whole_repository(command):
    ruff = ruff_executable()
    if ruff is None:
        pytest.skip(
            f"ruff is not installed next to {sys.executable} (pip install -r requirements-test.txt)"
        )
    result = subprocess.run(
        [str(ruff), *command, "--config", str(PYPROJECT), "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (
        f"ruff {command[0]} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}"
    )


def test_ruff_config_selects_the_required_rules():
    lint = load_pyproject().get("tool", {}).get("ruff", {}).get("lint", {})
    selected = set(lint.get("select", ()))
    missing = REQUIRED_RULES - selected
    assert not missing, f"[tool.ruff.lint] select lacks {sorted(missing)}: {sorted(selected)}"
    assert not REQUIRED_RULES & set(lint.get("ignore", ())), "a whole rule family is ignored"
