"""Following ``fit-links``' arguments from the command line to its JSON, the calls go down the
layers and come back once: no function of a lower layer calls one of a higher layer (not even
through a callback), and the command line enters the job once."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

from helpers.layers import layer_rank
from inertia_id_ros import cli
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim.recorders import write_joint_torques
from inertia_id_ros.sim.torques import panda_payload_torque_simulators


def _rank(module: str) -> int | None:
    """The layer rank of the package module ``module``; ``None`` outside the layers."""
    parts = module.split(".")
    if parts[0] != "inertia_id_ros" or len(parts) < 2:
        return None
    return layer_rank(parts[1]) or None


def test_fit_links_calls_go_down_the_layers_and_come_back_once(tmp_path: Path) -> None:
    unloaded, _ = panda_payload_torque_simulators(seed=0)
    data = tmp_path / "unloaded.npz"
    write_joint_torques(str(data), unloaded, 4.0, 100.0, 0)
    climbs: list[str] = []
    job_entries: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee, caller = (
            frame.f_globals.get("__name__", ""),
            frame.f_back.f_globals.get("__name__", ""),
        )
        low, high = _rank(caller), _rank(callee)
        if low is not None and high is not None and high > low:
            climbs.append(
                f"{caller}.{frame.f_back.f_code.co_name} -> {callee}.{frame.f_code.co_name}"
            )
        if callee == "inertia_id_ros.jobs.fit_links" and caller.startswith("inertia_id_ros.cli"):
            job_entries.append(frame.f_code.co_name)

    argv = ["fit-links", "--urdf", str(example_robot_urdf("panda")), "--data", str(data)]
    argv += ["--json", str(tmp_path / "links.json"), "--filter-half-width", "0.03"]
    sys.setprofile(profile)
    try:
        code = cli.main(argv)
    finally:
        sys.setprofile(None)
    assert code == 0 and (tmp_path / "links.json").is_file()
    assert climbs == []
    assert [name for name in job_entries if name != "__init__"] == ["fit_links"]  # not options
