"""The exit codes the docs give are the code's: ``docs/reference/command-line.md``'s table against
:mod:`inertia_id_ros.cli.common`'s ``EXIT_*``, and each of its documented cases run through
``inertia-id`` with the code it says."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml

from inertia_id_ros import cli
from inertia_id_ros.cli.common import EXIT_BAD_INPUT, EXIT_IMPLAUSIBLE, EXIT_NO_ESTIMATE
from inertia_id_ros.core.robots import example_robot_urdf

REFERENCE = Path(__file__).parents[3] / "docs" / "reference" / "command-line.md"
PANDA_ARM = [f"panda_joint{i}" for i in range(1, 8)]


def _table(text: str, heading: str) -> dict[str, str]:
    """The rows ``| first | second |`` of the first table after ``heading``."""
    rows: dict[str, str] = {}
    for line in text.split(heading, 1)[1].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        first, second = (cell.strip() for cell in line.strip("|").split("|")[:2])
        if set(first) - {"-", " "} and first not in ("code", "case"):
            rows[first] = second
    return rows


def test_the_exit_code_table_is_the_code() -> None:
    codes = _table(REFERENCE.read_text(), "## Exit codes")
    assert set(codes) == {"0", str(EXIT_NO_ESTIMATE), str(EXIT_BAD_INPUT), str(EXIT_IMPLAUSIBLE)}
    assert codes[str(EXIT_NO_ESTIMATE)].startswith("no estimate")
    assert codes[str(EXIT_BAD_INPUT)].startswith("bad input")
    assert codes[str(EXIT_IMPLAUSIBLE)].startswith("refused")


def _log(tmp_path: Path, t_scale: float = 1.0, degrees: bool = False) -> Path:
    t = np.arange(400) / 200.0 * t_scale
    q = 0.8 * np.sin(np.outer(np.arange(400) / 200.0, np.linspace(0.5, 1.5, 7)) + 0.3)
    path = tmp_path / "log.npz"
    np.savez(
        path,
        t=t,
        q=np.rad2deg(q) if degrees else q,
        effort=np.ones_like(q),
        joint_names=np.array(PANDA_ARM),
    )
    return path


def _described(tmp_path: Path, **changes: object) -> list[str]:
    _log(tmp_path, t_scale=1000.0 if changes.pop("ms", False) else 1.0)
    description: dict = {
        "streams": {"log": {"file": "log.npz", "time": "t", "time_unit": "s"}},
        "joints": {
            "position": {"key": "q", "unit": "rad"},
            "effort": {"key": "effort", "unit": "Nm"},
        },
    }
    description.update(changes)
    (tmp_path / "log.yaml").write_text(yaml.safe_dump(description))
    return ["--input", str(tmp_path / "log.yaml")]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "stamps in milliseconds": lambda p: ["--data", str(_log(p, t_scale=1000.0))],
    "positions in degrees": lambda p: ["--data", str(_log(p, degrees=True))],
    "a unit given": lambda p: _described(p, ms=True),
    "unknown key": lambda p: _described(p, window_s=[0, 1]),
    "per-joint map": lambda p: _described(
        p,
        joints={
            "position": {"key": "q", "unit": "rad"},
            "effort": {"key": "effort", "unit": "Nm", "sign": {"panda_joint9": -1}},
        },
    ),
    "does not exist": lambda p: ["--data", str(p / "missing.npz")],
}


@pytest.mark.parametrize("phrase", sorted(CASES))
def test_each_documented_case_exits_as_documented(phrase: str, tmp_path: Path) -> None:
    cases = _table(REFERENCE.read_text(), "Documented cases")
    (documented,) = [int(code) for case, code in cases.items() if phrase in case]
    argv = ["fit-links", "--urdf", str(example_robot_urdf("panda")), *CASES[phrase](tmp_path)]
    assert cli.main(argv) == documented


def test_every_documented_case_is_run() -> None:
    cases = _table(REFERENCE.read_text(), "Documented cases")
    assert cases and all(any(phrase in case for phrase in CASES) for case in cases)


def test_the_how_tos_name_only_exit_codes_the_code_has() -> None:
    known = {0, EXIT_NO_ESTIMATE, EXIT_BAD_INPUT, EXIT_IMPLAUSIBLE, 130}
    pages = (REFERENCE.parents[1] / "how-to").glob("*.md")
    named = {
        int(code)
        for page in pages
        for code in re.findall(r"exit(?:s| code)? (\d+)", page.read_text())
    }
    assert named and named <= known
