"""The excite jobs: design an exciting motion for a target (:func:`design`,
:mod:`inertia_id_ros.motion.design`) or check a trajectory (:func:`check`), against the robot's
limits, a workspace (:mod:`inertia_id_ros.motion.workspace`), obstacles and self-collision
(:mod:`inertia_id_ros.motion.collision`).

A motion that breaks a limit is refused: one :data:`~inertia_id_ros.findings.REFUSE` finding per
broken limit (kinds ``position_limit``, ``velocity_limit``, ``acceleration_limit``,
``torque_limit``, ``workspace``, ``collision``), its message naming the limit and by how much,
its subject the motion; the result's ``verdict`` says it in one sentence.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import InputError
from inertia_id_ros.findings import REFUSE, Finding, refused
from inertia_id_ros.jobs.base import JobResult, Progress, findings_document, load_urdf
from inertia_id_ros.options import DEFAULT_COLLISION_MARGIN, DEFAULT_MAX_ACCELERATION

if TYPE_CHECKING:
    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.chain.motors import MotorCoupling
    from inertia_id_ros.motion.collision import CollisionChecker
    from inertia_id_ros.motion.design import DesignResult
    from inertia_id_ros.motion.limits import MotionLimits
    from inertia_id_ros.motion.objectives import ExcitationObjective, ObjectiveSettings
    from inertia_id_ros.motion.trajectory import ExcitationTrajectory
    from inertia_id_ros.motion.workspace import WorkspaceChecker

DESIGNED_MOTION = "the designed motion"
"""The subject of a design's findings."""


@dataclass(frozen=True)
class LimitOptions:
    """What a motion keeps besides the URDF's position and velocity limits: ``max_acceleration``
    of every joint (rad/s²), the URDF links' torques within the effort limits
    (``torque_limits``), the Cartesian limits of frames in a ``workspace`` file, and collision
    distances >= ``collision_margin`` (m) between the links (``srdf``: the robot's SRDF, the
    pairs it leaves, URDF collision geometry) and to the obstacles of an ``environment`` file."""

    max_acceleration: float = DEFAULT_MAX_ACCELERATION
    torque_limits: bool = False
    workspace: str | None = None
    srdf: str | None = None
    environment: str | None = None
    collision_margin: float = DEFAULT_COLLISION_MARGIN


@dataclass(frozen=True)
class DesignOptions:
    """A design: the ``joints`` to move (URDF order) for ``target`` (a key of
    :data:`~inertia_id_ros.motion.objectives.OBJECTIVES`) over ``duration`` s; ``sensor_frame``
    (URDF frame of the F/T sensor, for a target that takes one, and only then); the ``start`` and
    end pose (rad; default the middle of the limits); ``seed`` of the random motions;
    ``prior_recording``: a recording (NPZ or CSV) whose information the motion adds to;
    ``time_limit`` (s; default the target's); ``limits``; ``coupling``: a YAML (or JSON) file
    ``{joints: [...], matrix: [[...]]}`` of a transmission's coupling (as a chain config's
    ``coupling``), whose coupled motors' rotor inertia and friction the links target
    identifies too."""

    joints: tuple[str, ...]
    target: str
    duration: float
    sensor_frame: str | None = None
    start: tuple[float, ...] | None = None
    seed: int = 0
    prior_recording: str | None = None
    time_limit: float | None = None
    limits: LimitOptions = LimitOptions()
    coupling: str | None = None


@dataclass(frozen=True)
class ExcitationDesign(JobResult["ExcitationTrajectory"]):
    """A design: ``estimate`` the motion (refused when it breaks the workspace or a collision
    distance: nothing should run it), ``design`` how it was found (the objective's value,
    information and statistics, the limits), ``verdict`` the refusal in one sentence (``""``
    when none)."""

    design: DesignResult = field(kw_only=True)
    verdict: str = ""


@dataclass(frozen=True)
class MotionCheck(JobResult["ExcitationTrajectory"]):
    """A check: ``estimate`` the trajectory checked, ``verdict`` the refusal in one sentence
    (``""`` when it keeps every limit)."""

    verdict: str = ""


def design(urdf: str, options: DesignOptions, progress: Progress | None = None) -> ExcitationDesign:
    """Design a motion (:func:`~inertia_id_ros.motion.design.design_excitation`) of the robot
    of the URDF file ``urdf`` and check it against the workspace and collision limits.
    ``progress`` receives the limits used, the optimisation's progress and the collision
    check's outcome, line by line."""
    from inertia_id_ros.motion.design import design_excitation
    from inertia_id_ros.motion.limits import motion_limits
    from inertia_id_ros.motion.objectives import OBJECTIVES, ObjectiveSettings, objective_type

    say = progress or _silent
    kind = objective_type(options.target)
    if kind.takes_sensor_frame != (options.sensor_frame is not None):
        framed = " or ".join(name for name, o in OBJECTIVES.items() if o.takes_sensor_frame)
        raise InputError(f"--sensor-frame is needed with --target {framed} and only then")
    model = load_urdf(urdf)
    limit_options = options.limits
    workspace, collision = _safety(urdf, model, limit_options)
    limits = motion_limits(
        model,
        options.joints,
        max_acceleration=limit_options.max_acceleration,
        torque_limits=limit_options.torque_limits,
    )
    say(f"limits used (position margin {limits.position_margin:g} rad):")
    for line in limits.table():
        say("  " + line)
    base = ObjectiveSettings(sensor_frame=options.sensor_frame, coupling=_coupling(options))
    settings = replace(base, prior_information=_prior(model, options, kind, base))
    result = design_excitation(
        model,
        options.joints,
        options.target,
        options.duration,
        settings=settings,
        start=options.start,
        max_acceleration=limit_options.max_acceleration,
        seed=options.seed,
        progress=say,
        time_limit=options.time_limit,
        torque_limits=limit_options.torque_limits,
        collision=collision,
        collision_margin=limit_options.collision_margin,
    )
    trajectory = result.trajectory
    findings, notes = _safety_findings(
        DESIGNED_MOTION, trajectory, workspace, collision, limit_options.collision_margin
    )
    for line in notes:
        say(line)
    return ExcitationDesign(
        trajectory,
        tuple(findings),
        _design_document(result, findings, options),
        () if refused(findings) else (_achieved(result, options),),
        verdict=verdict(DESIGNED_MOTION, findings),
        design=result,
    )


def check(urdf: str, trajectory_path: str, options: LimitOptions = LimitOptions()) -> MotionCheck:
    """Check the trajectory file ``trajectory_path`` (NPZ,
    :meth:`~inertia_id_ros.motion.trajectory.ExcitationTrajectory.load_npz`) of the robot of the
    URDF file ``urdf`` against its URDF's position and velocity limits (no margin) and
    ``options``."""
    from inertia_id_ros.motion.limits import motion_limits, torque_excess
    from inertia_id_ros.motion.trajectory import ExcitationTrajectory

    trajectory = ExcitationTrajectory.load_npz(trajectory_path)
    model = load_urdf(urdf)
    limits = motion_limits(
        model,
        trajectory.joint_names,
        position_margin=0.0,
        max_acceleration=options.max_acceleration,
        torque_limits=options.torque_limits,
    )
    subject = trajectory_path
    findings = _limit_findings(subject, limits, trajectory)
    torque = torque_excess(model, trajectory, limits)  # 0 without torque limits
    if torque > 1.0:
        findings.append(_torque_finding(subject, torque))
    safety, notes = _safety_findings(
        subject, trajectory, *_safety(urdf, model, options), options.collision_margin
    )
    findings += safety
    passed = () if refused(findings) else (_within_limits(trajectory_path, trajectory),)
    document = {
        "trajectory": trajectory_path,
        "duration": trajectory.duration,
        "joint_names": list(trajectory.joint_names),
        **findings_document(findings),
    }
    return MotionCheck(
        trajectory, tuple(findings), document, (*notes, *passed), verdict(subject, findings)
    )


def verdict(subject: str, findings: list[Finding]) -> str:
    """``"<subject> exceeds <limit> by <amount>; ..."``: the refusing ``findings`` of a motion
    in one sentence (``""`` without one)."""
    broken = [f.message for f in findings if f.severity == REFUSE]
    return f"{subject} exceeds " + "; ".join(broken) if broken else ""


def _silent(message: str) -> None:
    """A progress callback that drops the message."""


def _prior(
    model: pin.Model,
    options: DesignOptions,
    kind: type[ExcitationObjective],
    settings: ObjectiveSettings,
) -> np.ndarray | None:
    """The information of ``options.prior_recording`` for the objective ``kind`` with
    ``settings`` (``None`` without a recording)."""
    from inertia_id_ros.offline.information import recording_information

    if options.prior_recording is None:
        return None
    return recording_information(options.prior_recording, model, options.joints, kind, settings)


def _coupling(options: DesignOptions) -> MotorCoupling | None:
    """The coupling of the file ``options.coupling`` (``None`` without one)."""
    import yaml

    from inertia_id_ros.chain.motors import MotorCoupling

    path = options.coupling
    if path is None:
        return None
    try:
        mapping = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"cannot read --coupling {path}: {e}") from None
    try:
        if set(mapping) != {"joints", "matrix"}:
            raise ValueError(f"it has {sorted(mapping)}")
        return MotorCoupling.from_json(mapping)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"--coupling {path}: needs 'joints' and a square 'matrix' ({e})") from None


def _safety(
    urdf: str, model: pin.Model, options: LimitOptions
) -> tuple[WorkspaceChecker | None, CollisionChecker | None]:
    """The workspace and collision checkers of ``options`` (``None``: not asked for)."""
    from inertia_id_ros.motion.collision import CollisionChecker, load_environment
    from inertia_id_ros.motion.workspace import Workspace, WorkspaceChecker

    workspace = (
        None
        if options.workspace is None
        else WorkspaceChecker(model, Workspace.load_yaml(options.workspace))
    )
    obstacles = () if options.environment is None else load_environment(options.environment)
    collision = (
        None
        if options.srdf is None and not obstacles
        else CollisionChecker(urdf, options.srdf, obstacles=obstacles)
    )
    return workspace, collision


_LIMIT_NAMES = {
    "position": ("position_limit", "the URDF's position limit", "rad"),
    "velocity": ("velocity_limit", "the URDF's velocity limit", "rad/s"),
    "acceleration": ("acceleration_limit", "--max-acceleration", "rad/s²"),
}
"""Per :meth:`MotionLimits.violations` key: the finding's kind, the limit's name, its unit."""


def _limit_findings(
    subject: str, limits: MotionLimits, trajectory: ExcitationTrajectory
) -> list[Finding]:
    """A finding for each joint limit (position, velocity, acceleration) the trajectory's
    samples exceed."""
    findings = []
    for name, excess in limits.violations(trajectory).items():
        if excess > 0.0:
            kind, limit, unit = _LIMIT_NAMES[name]
            message = f"{limit} by {excess:.4g} {unit}"
            findings.append(Finding(kind, subject, REFUSE, message, {"excess": excess}))
    return findings


def _torque_finding(subject: str, torque: float) -> Finding:
    """The finding of torques ``torque`` times the effort limits (at most)."""
    message = f"the URDF's effort limit by {100.0 * (torque - 1.0):.1f} % (the URDF links' torques)"
    return Finding("torque_limit", subject, REFUSE, message, {"torque_over_limit": torque})


def _safety_findings(
    subject: str,
    trajectory: ExcitationTrajectory,
    workspace: WorkspaceChecker | None,
    collision: CollisionChecker | None,
    margin: float,
) -> tuple[list[Finding], list[str]]:
    """The findings of what ``trajectory`` breaks of the workspace and collision ``margin``
    (m), and the lines that report a collision check it passes."""
    from inertia_id_ros.motion.collision import DEFAULT_CHECK_RATE_HZ

    findings, notes = [], []
    if workspace is not None:
        violation = workspace.check(trajectory)
        if violation is not None:
            figures = {
                "limit": violation.limit.name,
                "frame": violation.frame,
                "time": violation.time,
                "excess": violation.excess,
            }
            findings.append(Finding("workspace", subject, REFUSE, str(violation), figures))
    if collision is not None:
        c = collision.clearance(trajectory)
        shortfall = c.shortfall(margin)
        if shortfall:
            figures = {"distance": c.distance, "pair": list(c.pair), "time": c.time}
            findings.append(Finding("collision", subject, REFUSE, shortfall, figures))
        else:
            notes.append(
                f"collision: smallest distance {1e3 * c.distance:.1f} mm ({c.pair[0]} and "
                f"{c.pair[1]} at {c.time:.2f} s; convex hulls checked at "
                f"{DEFAULT_CHECK_RATE_HZ:g} Hz)"
            )
    return findings, notes


def _achieved(result: DesignResult, options: DesignOptions) -> str:
    """The summary line of a design."""
    prior, coupling = options.prior_recording, options.coupling
    return (
        f"achieved: {result.objective_name} {result.objective:.4g} (random start "
        f"{result.stats.initial_objective:.4g}"
        + (f", prior: the information in {prior}" if prior is not None else "")
        + (f", with the coupled motors of {coupling}" if coupling is not None else "")
        + f"), design time {result.stats.seconds:.1f} s"
    )


def _within_limits(path: str, trajectory: ExcitationTrajectory) -> str:
    """The summary line of a check passed."""
    return (
        f"{path}: {trajectory.duration:g} s of {trajectory.n_joints} joints within the limits "
        "checked"
    )


def _design_document(
    result: DesignResult, findings: list[Finding], options: DesignOptions
) -> dict[str, Any]:
    """The JSON-able record of a design: its target, criterion, statistics and findings."""
    stats = result.stats
    return {
        "target": result.target,
        "joint_names": list(result.trajectory.joint_names),
        "duration": result.trajectory.duration,
        "objective_name": result.objective_name,
        "objective": result.objective,
        "initial_objective": stats.initial_objective,
        "prior_recording": options.prior_recording,
        "iterations": stats.iterations,
        "seconds": stats.seconds,
        "stopped_on_time": stats.stopped_on_time,
        **findings_document(findings),
    }
