"""A simulated fleet (``inertia-id fleet simulate``): Panda- and UR5-like arms, nightly runs of
the same exciting motion, each robot either with a wrist F/T sensor (mode ``payload``: the tool's
payload and the sensor's offset) or with joint torques (mode ``links``: the links and each joint's
friction). Payload schedules differ (tools swapped on some nights); some robots drift: a joint's
viscous friction grows, or the F/T sensor's force offset creeps, from a given run on, by a fixed
step per run; some runs carry the faults of real logs (a corrupt file, a truncated one, joint
positions logged in degrees: refused). Writes the runs (NPZ), a manifest (``manifest.yaml``) and
the truth (``truth.json``: the planted drifts, per robot)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

ARMS = ("panda", "ur5")
"""The simulated arms (example-robot-data URDFs)."""
SENSOR_FRAMES = {"panda": "panda_link8", "ur5": "tool0"}
"""Each arm's F/T sensor frame (its flange)."""
FIRST_NIGHT = datetime(2026, 1, 5, 2, 0, tzinfo=timezone.utc)
"""The first run's time; one run a night after it."""
FAULTS = ("corrupt", "truncated", "degrees")
"""The faults a run can carry: bytes overwritten, the file cut short, positions in degrees."""
NOMINAL_VISCOUS = 0.6
NOMINAL_COULOMB = 0.8
"""Each simulated joint's viscous (N m s/rad) and Coulomb (N m) friction before any drift."""
TOOLS = {"A": (1.5, (0.03, -0.02, 0.07)), "B": (0.8, (0.0, 0.01, 0.05))}
"""The payloads of the schedules: tool name -> (mass kg, centre of mass (m) in the flange
frame)."""


@dataclass(frozen=True)
class SimulatedRobot:
    """One robot of a simulated fleet: ``name``, ``arm`` (of :data:`ARMS`), ``mode``
    (``payload`` or ``links``), ``seed`` (its motion and noise), ``drift`` (``None`` or the
    parameter that drifts: ``<joint>.viscous`` or ``offset_fz``), the run index from which it
    drifts (``drift_from``) and its ``drift_step`` per run (N m s/rad or N), the night from which
    the tool is ``B`` (``swap_at``; ``None``: always ``A``), and ``faults`` (run index -> fault of
    :data:`FAULTS`)."""

    name: str
    arm: str
    mode: str
    seed: int
    drift: str | None = None
    drift_from: int = 0
    drift_step: float = 0.0
    swap_at: int | None = None
    faults: dict[int, str] = field(default_factory=dict)

    def drift_at(self, run: int) -> float:
        """The drifting parameter's change from its nominal value at run ``run``."""
        return self.drift_step * max(0, run - self.drift_from + 1) if self.drift else 0.0

    def tool_at(self, run: int) -> str:
        """The tool carried at run ``run``."""
        return "B" if self.swap_at is not None and run >= self.swap_at else "A"


@dataclass(frozen=True)
class FleetPlan:
    """What :func:`simulate_fleet` writes: ``robots``, ``runs`` per robot, each run ``duration``
    s at ``rate_hz``."""

    robots: tuple[SimulatedRobot, ...]
    runs: int
    duration: float = 8.0
    rate_hz: float = 100.0


def plan_fleet(
    n_robots: int, n_runs: int, n_drifting: int, n_faults: int = 0, seed: int = 0
) -> FleetPlan:
    """A fleet of ``n_robots`` (arms and modes alternating: Panda F/T, UR5 F/T, Panda torques,
    UR5 torques), ``n_runs`` nightly runs each; ``n_drifting`` of them drift from a run in the
    second half of their history (after the fifth, before the last four; F/T robots: the force
    offset along z; torque robots: one joint's viscous friction); every third robot swaps tools
    halfway; ``n_faults`` runs of robots that do not drift carry a fault (in turn of
    :data:`FAULTS`)."""
    import numpy as np

    if n_runs < 10 and n_drifting:
        raise ValueError(f"drifting robots need at least 10 runs, got {n_runs}")
    rng = np.random.default_rng(seed)
    drifting = set(rng.choice(n_robots, size=min(n_drifting, n_robots), replace=False).tolist())
    steady = [i for i in range(n_robots) if i not in drifting]
    faulty: dict[int, dict[int, str]] = {}
    for k in range(n_faults):
        robot = steady[k % len(steady)]
        faulty.setdefault(robot, {})[1 + (k // len(steady) * 3 + k) % (n_runs - 1)] = FAULTS[
            k % len(FAULTS)
        ]
    robots = []
    for i in range(n_robots):
        arm, mode = ARMS[i % 2], ("payload", "links")[(i // 2) % 2]
        drift, start, step = None, 0, 0.0
        if i in drifting:
            start = int(rng.integers(max(5, n_runs // 2), n_runs - 4))
            joint = int(rng.integers(0, 6))
            drift, step = (
                ("offset_fz", 0.008)
                if mode == "payload"
                else (f"{_joints(arm)[joint]}.viscous", 0.01)
            )
        robots.append(
            SimulatedRobot(
                f"{arm}-{i:03d}",
                arm,
                mode,
                seed + 17 * i,
                drift,
                start,
                step,
                n_runs // 2 if i % 3 == 2 else None,
                faulty.get(i, {}),
            )
        )
    return FleetPlan(tuple(robots), n_runs)


def simulate_fleet(folder: str | Path, plan: FleetPlan) -> Path:
    """Write ``plan``'s runs under ``folder`` (``runs/<robot>/<night>.npz``), its manifest
    ``folder/manifest.yaml`` (the runs' paths relative to it) and ``folder/truth.json``; the
    manifest's path."""
    import yaml

    folder = Path(folder)
    entries = []
    for robot in plan.robots:
        runs = []
        for k in range(plan.runs):
            path = Path("runs") / robot.name / f"{k:03d}.npz"
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            _write_run(folder / path, robot, k, plan)
            night = FIRST_NIGHT + timedelta(days=k)
            runs.append({"path": str(path), "time": night.isoformat(), "tool": robot.tool_at(k)})
        entries.append(_manifest_entry(robot, runs))
    manifest = folder / "manifest.yaml"
    manifest.write_text(yaml.safe_dump({"robots": entries}, sort_keys=False))
    truth = {"runs": plan.runs, "robots": [asdict(r) for r in plan.robots]}
    (folder / "truth.json").write_text(json.dumps(truth, indent=1))
    return manifest


def _manifest_entry(robot: SimulatedRobot, runs: list[dict[str, str]]) -> dict[str, Any]:
    """The manifest's entry of ``robot``: the options keep the per-run cost low (a given
    derivative filter, exact Coulomb sign, no delay or tilt search)."""
    entry: dict[str, Any] = {"name": robot.name, "urdf": robot.arm, "mode": robot.mode}
    if robot.mode == "payload":
        entry["sensor_frame"] = SENSOR_FRAMES[robot.arm]
    else:
        entry["options"] = {
            "filter_half_width": 0.05,
            "coulomb_velocity": 0.0,
            "torque_delay": 0.0,
            "estimate_tilt": False,
            "prior_weight": 0.001,
        }
    entry["runs"] = runs
    return entry


def _joints(arm: str) -> tuple[str, ...]:
    """The arm's moving joints."""
    from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, UR5_ARM_JOINTS

    return PANDA_ARM_JOINTS if arm == "panda" else UR5_ARM_JOINTS


def tool_theta(tool: str) -> np.ndarray:
    """theta (10,) of tool ``tool`` of :data:`TOOLS` (a 10 cm box about its centre of mass)."""
    import numpy as np

    from inertia_id_ros.core.inertia import theta_from_inertia
    from inertia_id_ros.sim.payload import box_inertia

    mass, com = TOOLS[tool]
    return theta_from_inertia(mass, np.array(com), box_inertia(mass, (0.1, 0.1, 0.1)))


def _write_run(path: Path, robot: SimulatedRobot, run: int, plan: FleetPlan) -> None:
    """Write run ``run`` of ``robot`` to ``path`` (with its fault, if any)."""
    import numpy as np

    from inertia_id_ros.formats.data import JointStates, write_joint_file

    rng = np.random.default_rng([robot.seed, run])
    t = np.arange(0.0, plan.duration, 1.0 / plan.rate_hz)
    if robot.mode == "payload":
        sim = _payload_simulator(robot, run)
        q, dq, wrench = sim.measure(t, rng)
        states = JointStates(t, tuple(sim.joint_names), q, dq)
    else:
        torques = _torque_simulator(robot, run)
        data = torques.measure(t, rng)
        q, dq, wrench = data.positions, data.velocities, None
        states = JointStates(t, tuple(torques.joint_names), q, dq, effort=data.efforts)
    fault = robot.faults.get(run)
    if fault == "degrees":
        states = JointStates(t, states.joint_names, np.degrees(q), dq, effort=states.effort)
    frame = SENSOR_FRAMES[robot.arm] if wrench is not None else ""
    write_joint_file(path, states, wrench, frame)
    if fault == "corrupt":
        raw = bytearray(path.read_bytes())
        raw[: len(raw) // 2] = rng.integers(0, 256, len(raw) // 2, dtype=np.uint8).tobytes()
        path.write_bytes(bytes(raw))
    elif fault == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


def _trajectory(robot: SimulatedRobot) -> Any:
    """The robot's nightly exciting motion (the same every night)."""
    from inertia_id_ros.core.robots import example_robot_urdf, load_model
    from inertia_id_ros.sim.payload import ExcitingTrajectory

    model = load_model(example_robot_urdf(robot.arm))
    return model, ExcitingTrajectory.for_model(model, _joints(robot.arm), seed=robot.seed)


def _payload_simulator(robot: SimulatedRobot, run: int) -> Any:
    """The F/T robot at run ``run``: its tool, its offset (crept when it drifts)."""
    import numpy as np

    from inertia_id_ros.sim.payload import DEFAULT_OFFSET, PayloadSimulator

    model, trajectory = _trajectory(robot)
    offset = DEFAULT_OFFSET + np.array([0.0, 0.0, robot.drift_at(run), 0.0, 0.0, 0.0])
    return PayloadSimulator(
        model,
        SENSOR_FRAMES[robot.arm],
        tool_theta(robot.tool_at(run)),
        trajectory,
        _joints(robot.arm),
        offset=offset,
    )


def _torque_simulator(robot: SimulatedRobot, run: int) -> Any:
    """The torque robot at run ``run``: its joints' friction (grown when it drifts)."""
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.core.robots import example_robot_urdf
    from inertia_id_ros.sim.torques import DriveTruth, JointTorqueSimulator

    joints = _joints(robot.arm)
    links = LinkModel.from_urdf(example_robot_urdf(robot.arm), joints)
    _, trajectory = _trajectory(robot)
    drives = {
        j: DriveTruth(
            viscous=NOMINAL_VISCOUS + (robot.drift_at(run) if robot.drift == f"{j}.viscous" else 0),
            coulomb=NOMINAL_COULOMB,
        )
        for j in joints
    }
    return JointTorqueSimulator(links, trajectory, drives=drives, torque_noise_std=0.05)
