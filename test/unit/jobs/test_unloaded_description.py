"""fit-payload-torques differencing through input descriptions alone: the unloaded run given as
a description (``--unloaded run.yaml``), here cut to start 1.17 s later in the motion, matched by
the time shift the search finds and prints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import InputError
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.fit_payload_torques import FitPayloadTorquesOptions, fit_payload_torques
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS
from inertia_id_ros.sim.torques import panda_payload_torque_runs

FLANGE = "panda_link8"


def describe(directory: Path, name: str, window: list[float] | None = None) -> Path:
    """An input description of ``name``.npz (canonical keys, stamps in s)."""
    description: dict = {
        "streams": {"run": {"file": f"{name}.npz", "time": "t", "time_unit": "s"}},
        "joints": {
            "names": list(PANDA_ARM_JOINTS),
            "position": {"key": "q", "unit": "rad"},
            "velocity": {"key": "dq"},
            "effort": {"key": "effort", "unit": "N·m"},
        },
    }
    if window is not None:
        description["window"] = window
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(description, allow_unicode=True))
    return path


def test_the_unloaded_run_as_a_description_matched_1_17_s_later(tmp_path: Path) -> None:
    runs = panda_payload_torque_runs(duration=8.0, rate=200.0, seed=2)
    for name, rec in (("unloaded", runs.unloaded), ("loaded", runs.loaded)):
        np.savez(tmp_path / f"{name}.npz", t=rec.t + 1000.0, q=rec.q, dq=rec.dq, effort=rec.effort)
    loaded = describe(tmp_path, "loaded")
    unloaded = describe(tmp_path, "unloaded", window=[1.17, 100.0])
    options = FitPayloadTorquesOptions(unloaded=str(unloaded), filter_half_width=0.03)
    fit = fit_payload_torques(
        str(example_robot_urdf("panda")), LogSource(input=str(loaded)), FLANGE, options
    )
    assert fit.alignment is not None
    assert fit.alignment.shift == pytest.approx(-1.17, abs=0.006)
    assert "time shift of -1.170 s" in "\n".join(fit.summary)
    assert fit.document["bodies"][0]["mass"] == pytest.approx(runs.payload_theta[0], rel=0.03)
    with pytest.raises(InputError, match="give the unloaded run as an input description"):
        fit_payload_torques(
            str(example_robot_urdf("panda")),
            LogSource(input=str(loaded)),
            FLANGE,
            FitPayloadTorquesOptions(unloaded=str(tmp_path / "unloaded.npz")),
        )
