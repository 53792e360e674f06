"""The simulated robots' recordings written the way other people's loggers write them, for the
worked examples of ``docs/how-to/real-logs.md`` (``inertia-id sim-log``): what an input
description has to read without code.

- :func:`write_wrist_logs`: the Panda with a wrist F/T sensor, as two CSV files on two clocks:
  the arm's joint states at 100 Hz with millisecond stamps, angles in degrees and the
  firmware's column names; the sensor's wrenches at 1 kHz with nanosecond stamps from its own
  clock, semicolon-separated, reporting the wrench the payload exerts on it (the opposite sign);
  the fingers not logged.
- :func:`write_current_log`: the Panda arm's joint positions and motor currents (current =
  torque / (torque constant × gear ratio), one joint counting against its axis) in an NPZ with
  keys of its own and no time, at a known rate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from inertia_id_ros.sim.payload import PayloadSimulator
from inertia_id_ros.sim.torques import panda_payload_torque_simulators

WRIST_JOINT_RATE_HZ = 100.0
WRIST_FT_RATE_HZ = 1000.0
WRIST_CLOCK_LAG_SEC = 0.012
"""How far the sensor's clock runs behind the arm's (s): its stamps plus this are the arm's."""
WRIST_START_MS = 1711029384123
"""The arm log's first stamp (ms; its clock's epoch)."""
CURRENT_RATE_HZ = 500.0
TORQUE_CONSTANTS = (0.118, 0.118, 0.096, 0.096, 0.071, 0.071, 0.071)
"""N·m/A at each of the Panda's seven motors, in joint order."""
GEAR_RATIO = 100.0
REVERSED_JOINT = 2
"""The joint (index) whose motor current counts against the joint's axis."""


def write_wrist_logs(folder: str | Path, duration: float, seed: int = 0) -> PayloadSimulator:
    """``arm.csv`` and ``ft.csv`` in ``folder`` (see the module docstring): ``duration`` s of
    :meth:`PayloadSimulator.panda` (``seed``); returns the simulator (its truth)."""
    folder = Path(folder)
    sim = PayloadSimulator.panda(seed=seed)
    rng = np.random.default_rng(seed + 1)
    t_arm = np.arange(int(round(duration * WRIST_JOINT_RATE_HZ))) / WRIST_JOINT_RATE_HZ
    q, dq = sim.measure_joints(t_arm, rng)
    names = [f"a{k + 1}" for k in range(q.shape[1])]
    header = ["time_ms", *(f"{n}_pos" for n in names), *(f"{n}_vel" for n in names)]
    stamps_ms = WRIST_START_MS + np.round(1e3 * t_arm).astype(np.int64)
    rows = [
        ",".join([str(stamp), *(f"{v:.6f}" for v in np.degrees(np.concatenate([qi, dqi])))])
        for stamp, qi, dqi in zip(stamps_ms, q, dq)
    ]
    (folder / "arm.csv").write_text("\n".join([",".join(header), *rows]) + "\n")
    t_ft = np.arange(int(round(duration * WRIST_FT_RATE_HZ))) / WRIST_FT_RATE_HZ
    wrench = -sim.measure_wrench(t_ft, rng)  # the wrench on the sensor
    lag_ns = int(round(WRIST_CLOCK_LAG_SEC * 1e9))
    stamps_ns = WRIST_START_MS * 1_000_000 - lag_ns + np.round(1e9 * t_ft).astype(np.int64)
    rows = [";".join([str(s), *(f"{v:.5f}" for v in w)]) for s, w in zip(stamps_ns, wrench)]
    (folder / "ft.csv").write_text("\n".join(["stamp_ns;Fx;Fy;Fz;Tx;Ty;Tz", *rows]) + "\n")
    return sim


def write_current_log(path: str | Path, duration: float, seed: int = 0) -> None:
    """The NPZ ``path`` (keys ``q_meas`` (N, 7) rad and ``i_motor`` (N, 7) A; see the module
    docstring) of ``duration`` s of the simulated Panda arm without a payload
    (:func:`~inertia_id_ros.sim.torques.panda_payload_torque_simulators`, ``seed``), at
    :data:`CURRENT_RATE_HZ`."""
    unloaded, _ = panda_payload_torque_simulators(seed=seed)
    t = np.arange(int(round(duration * CURRENT_RATE_HZ))) / CURRENT_RATE_HZ
    data = unloaded.measure(t, np.random.default_rng(seed + 1))
    sign = np.ones(len(TORQUE_CONSTANTS))
    sign[REVERSED_JOINT] = -1.0
    current = data.efforts * sign / (np.array(TORQUE_CONSTANTS) * GEAR_RATIO)
    np.savez(path, q_meas=data.positions, i_motor=current)
