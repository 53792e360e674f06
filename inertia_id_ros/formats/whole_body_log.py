"""Recorded whole-body data (floating base, IMU, several F/T sensors) and their JSON result.

**NPZ** keys (SI units; :func:`read_whole_body_file`):

- ``t`` (N,) strictly increasing stamps (s); ``joint_names`` (n,); ``q``, ``dq`` (N, n); optional
  ``ddq`` and ``effort`` (N, n) (missing ``dq``/``ddq`` are differentiated);
- ``imu_frame`` (a URDF frame); ``imu_orientation`` (N, 4; x, y, z, w; world ← IMU, z up);
  ``imu_angular_velocity`` (N, 3; IMU frame); ``imu_linear_acceleration`` (N, 3; specific force
  in the IMU frame, as ``sensor_msgs/Imu``: +9.81 up at rest). Required for a ``floating`` base;
  a ``suspended`` base is at rest without them; a ``fixed`` base's fixed frame is still, tilted by
  ``fixed_tilt`` or, with them, by the IMU's mean specific force (``imu_tilt``, as online);
- ``ft_frames`` (S,) URDF links or fixed joints; ``ft_types`` (S,) ``contact`` or ``internal``
  (:data:`~inertia_id_ros.core.whole_body_model.SENSOR_KINDS`); ``ft_wrench`` (N, S, 6)
  ``[fx, fy, fz, tx, ty, tz]`` in each sensor's frame; optional ``ft_flip_wrench_sign`` (S,)
  bool: the sensor reports the opposite wrench (e.g. the real iCub's ``child_to_parent``).

**ROS 2 bags** (:func:`read_whole_body_bag`): ``sensor_msgs/JointState`` (joint states),
``sensor_msgs/Imu`` (its ``header.frame_id`` is the IMU frame) and one
``geometry_msgs/WrenchStamped`` topic per F/T sensor (``header.frame_id``: the sensor's frame;
its kind is given). Synchronised by header stamp at the stamps of the first F/T topic: joint
states by a local polynomial fit (as the node), the IMU and the other wrenches interpolated
linearly; a stamp where an input has no sample within ``max_gap`` on both sides (it stopped, or
has not started) is dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.chain.whole_body_fit import WholeBodyFit, noise_groups
from inertia_id_ros.core.base_motion import BaseMotion, gyro_derivative, tilt_from_up
from inertia_id_ros.core.filtering import inside_segments, joint_states_at
from inertia_id_ros.core.whole_body_model import (
    SENSOR_KINDS,
    FTSensor,
    WholeBodyModel,
    WholeBodySamples,
)
from inertia_id_ros.errors import ConfigError, DataError, FrameNotFound
from inertia_id_ros.formats.data import (
    IMU_TYPE,
    JOINT_STATE_TYPE,
    WRENCH_TYPE,
    JointStates,
    _array,
    _read_bag,
    _read_table,
    _require,
    _sorted_by_stamp,
    _states_from_messages,
    _states_from_table,
    header_seconds,
    with_derivatives,
    wrench_values,
)
from inertia_id_ros.formats.export import body_json
from inertia_id_ros.online.whole_body_config import WholeBodyEstimate
from inertia_id_ros.options import DEFAULT_IMU_TILT, DEFAULT_IMU_TOPIC, IMU_TILT_USES

IMU_KEYS = ("imu_orientation", "imu_angular_velocity", "imu_linear_acceleration")
DEFAULT_MAX_GAP = 0.1
"""A bag input with no sample within this many seconds of a stamp (on either side) does not
cover it: the stamp is dropped."""
URDF_PRIOR_LABEL = "urdf (not identified)"
"""Identifiability label of a link left out of the identified bodies."""


@dataclass(frozen=True)
class WholeBodyRecording:
    """A whole-body recording (see the module docstring); ``imu`` maps :data:`IMU_KEYS` to
    arrays, or is empty; ``source`` names the file; ``uncovered`` (bags) counts the stamps of the
    first F/T topic dropped per input that does not cover them (stopped, or not started)."""

    states: JointStates
    imu_frame: str | None
    imu: dict[str, np.ndarray]
    ft_frames: tuple[str, ...]
    ft_types: tuple[str, ...]
    ft_wrench: np.ndarray
    source: str
    uncovered: dict[str, int] = dataclasses.field(default_factory=dict)
    ft_flip_wrench_sign: tuple[bool, ...] = ()
    """Per F/T sensor: it reports the opposite wrench (empty: none does)."""


def _strings(source: str, table: dict[str, Any], key: str) -> tuple[str, ...]:
    values = np.atleast_1d(np.asarray(table[key]))
    if values.ndim != 1 or values.dtype.kind not in "US":
        raise DataError(
            f"{source}: {key!r} must be a 1-D array of strings, got {values.dtype} {values.shape}"
        )
    return tuple(str(v) for v in values)


def read_whole_body_file(path: str | Path) -> WholeBodyRecording:
    """A whole-body NPZ. Raises :class:`DataError` naming the file and the key."""
    source, table = _read_table(path)
    _require(source, table, "ft_frames", "ft_types", "ft_wrench")
    states = _states_from_table(source, table, with_effort="effort" in table)
    n = states.n_samples
    frames = _strings(source, table, "ft_frames")
    types = _strings(source, table, "ft_types")
    if len(types) != len(frames):
        raise DataError(
            f"{source}: 'ft_types' has {len(types)} entries for {len(frames)} 'ft_frames'"
        )
    wrench = _array(source, "ft_wrench", table["ft_wrench"], (n, len(frames), 6))
    imu: dict[str, np.ndarray] = {}
    present = [key for key in IMU_KEYS if key in table]
    if present:
        _require(source, table, "imu_frame", *IMU_KEYS)
        for key, width in zip(IMU_KEYS, (4, 3, 3)):
            imu[key] = _array(source, key, table[key], (n, width))
    frame = str(np.asarray(table["imu_frame"])) if "imu_frame" in table else None
    flips: tuple[bool, ...] = ()
    if "ft_flip_wrench_sign" in table:
        values = np.atleast_1d(np.asarray(table["ft_flip_wrench_sign"]))
        if values.shape != (len(frames),) or values.dtype.kind != "b":
            raise DataError(
                f"{source}: 'ft_flip_wrench_sign' must be {len(frames)} booleans (one "
                f"per 'ft_frames'), got {values.dtype} {values.shape}"
            )
        flips = tuple(bool(v) for v in values)
    return WholeBodyRecording(
        states, frame, imu, frames, types, wrench, source, ft_flip_wrench_sign=flips
    )


def _covered(t: np.ndarray, query: np.ndarray, max_gap: float) -> np.ndarray:
    """Whether each query stamp has samples of ``t`` within ``max_gap`` on both sides."""
    after = np.searchsorted(t, query, side="left")
    before = np.clip(after - 1, 0, t.size - 1)
    after_c = np.clip(after, 0, t.size - 1)
    exact = t[after_c] == query
    return exact | (
        (after > 0)
        & (after < t.size)
        & (query - t[before] <= max_gap)
        & (t[after_c] - query <= max_gap)
    )


def _interpolate(t: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Linear interpolation of ``values`` (K, ...) at ``query`` (M,) (inside ``t``)."""
    flat = values.reshape(values.shape[0], -1)
    out = np.column_stack([np.interp(query, t, column) for column in flat.T])
    return out.reshape((query.size,) + values.shape[1:])


def read_whole_body_bag(
    path: str | Path,
    ft_topics: Sequence[tuple[str, str]],
    joint_states_topic: str = "/joint_states",
    imu_topic: str | None = DEFAULT_IMU_TOPIC,
    half_width: float = 0.05,
    max_gap: float = DEFAULT_MAX_GAP,
) -> WholeBodyRecording:
    """A whole-body recording from a ROS 2 bag (see the module docstring). ``ft_topics``:
    ``(topic, kind)`` per F/T sensor; ``imu_topic`` ``None`` for a base at rest. Joint states
    come with velocities and accelerations (local polynomial fit over ``half_width`` s)."""
    source = str(path)
    if not ft_topics:
        raise DataError(f"{source}: give at least one F/T topic")
    for topic, kind in ft_topics:
        if kind not in SENSOR_KINDS:
            raise DataError(
                f"F/T topic {topic!r}: type {kind!r} is neither 'contact' nor 'internal'"
            )
    topics = [(joint_states_topic, JOINT_STATE_TYPE)] + [
        (topic, WRENCH_TYPE) for topic, _ in ft_topics
    ]
    if imu_topic is not None:
        topics.append((imu_topic, IMU_TYPE))
    msgs = _read_bag(path, topics)
    states = _states_from_messages(source, joint_states_topic, msgs[joint_states_topic])
    sensors = []
    for topic, kind in ft_topics:
        stamps = [header_seconds(m.header) for m in msgs[topic]]
        order = _sorted_by_stamp(source, topic, stamps)
        names = sorted({m.header.frame_id for m in msgs[topic]})
        if len(names) != 1 or not names[0]:
            raise DataError(f"{source}: wrenches on {topic!r} must name one frame, got {names}")
        sensors.append(
            SensorSeries(
                topic,
                names[0],
                kind,
                np.array(stamps)[order],
                np.array([wrench_values(m) for m in msgs[topic]])[order],
            )
        )
    imu = None
    if imu_topic is not None:
        imu_msgs = msgs[imu_topic]
        stamps = [header_seconds(m.header) for m in imu_msgs]
        order = _sorted_by_stamp(source, imu_topic, stamps)
        raw = {
            "imu_orientation": [
                [m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w]
                for m in imu_msgs
            ],
            "imu_angular_velocity": [
                [m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z] for m in imu_msgs
            ],
            "imu_linear_acceleration": [
                [m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z]
                for m in imu_msgs
            ],
        }
        imu = ImuSeries(
            imu_topic,
            imu_msgs[0].header.frame_id,
            np.array(stamps)[order],
            {key: np.asarray(v, dtype=float)[order] for key, v in raw.items()},
        )
    return synchronise(source, joint_states_topic, states, sensors, imu, half_width, max_gap)


@dataclass(frozen=True)
class SensorSeries:
    """One F/T sensor's wrenches on their own stamps: ``name`` (its topic or stream), URDF
    ``frame``, ``kind``, ``t`` (M,) s increasing, ``wrench`` (M, 6)."""

    name: str
    frame: str
    kind: str
    t: np.ndarray
    wrench: np.ndarray


@dataclass(frozen=True)
class ImuSeries:
    """IMU samples on their own stamps: ``name`` (topic or stream), URDF ``frame``, ``t`` (M,)
    s increasing, ``values`` keyed by :data:`IMU_KEYS`."""

    name: str
    frame: str
    t: np.ndarray
    values: dict[str, np.ndarray]


def synchronise(
    source: str,
    joints_name: str,
    states: JointStates,
    sensors: Sequence[SensorSeries],
    imu: ImuSeries | None,
    half_width: float = 0.05,
    max_gap: float = DEFAULT_MAX_GAP,
) -> WholeBodyRecording:
    """Joint states, F/T sensors and IMU, each on its own stamps, synchronised at the first
    sensor's stamps (see the module docstring); ``joints_name`` names the joint states' input
    in the ``uncovered`` counts."""
    query = sensors[0].t
    inside = inside_segments(states.t, query, half_width, half_width)  # not by a gap (runs)
    coverage = {joints_name: _covered(states.t, query, max_gap) | ~inside}
    for sensor in sensors[1:]:
        coverage[sensor.name] = _covered(sensor.t, query, max_gap)
    values: dict[str, np.ndarray] = {}
    if imu is not None:
        coverage[imu.name] = _covered(imu.t, query, max_gap)
        values = dict(imu.values)
        quat = values["imu_orientation"]  # one hemisphere, so that interpolation is smooth
        flips = np.concatenate([[1.0], np.sign(np.sum(quat[1:] * quat[:-1], axis=1) + 1e-300)])
        values["imu_orientation"] = quat * np.cumprod(flips)[:, None]
    keep = inside & np.logical_and.reduce(list(coverage.values()))
    uncovered = {
        name: int(np.sum(~covered)) for name, covered in coverage.items() if not covered.all()
    }
    query = query[keep]
    if query.size == 0:
        raise DataError(f"{source}: no stamp of {sensors[0].name!r} is covered by every input")
    q, dq, ddq = joint_states_at(states.t, states.q, states.dq, query, half_width)
    effort = None if states.effort is None else _interpolate(states.t, states.effort, query)
    synchronised: dict[str, np.ndarray] = {}
    if imu is not None:
        synchronised = {key: _interpolate(imu.t, v, query) for key, v in values.items()}
        quat = synchronised["imu_orientation"]
        synchronised["imu_orientation"] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    wrench = np.stack([_interpolate(s.t, s.wrench, query) for s in sensors], axis=1)
    return WholeBodyRecording(
        JointStates(query, states.joint_names, q, dq, ddq, effort),
        None if imu is None else imu.frame,
        synchronised,
        tuple(s.frame for s in sensors),
        tuple(s.kind for s in sensors),
        wrench,
        source,
        uncovered,
    )


def whole_body_inputs(
    recording: WholeBodyRecording,
    urdf: str | Path,
    base: str = "floating",
    bodies: Sequence[str] | None = None,
    half_width: float = 0.05,
    gyro_half_width: float | None = None,
    flip_wrench_sign: Sequence[str] = (),
    fixed_frame: str | None = None,
    fixed_tilt: Sequence[float] = (0.0, 0.0),
    imu_tilt: str = DEFAULT_IMU_TILT,
    estimate_contact_offsets: bool = False,
) -> tuple[WholeBodyModel, WholeBodySamples]:
    """The model and synchronised samples of ``recording``; ``flip_wrench_sign``: frames of F/T
    sensors that report the opposite wrench (besides the recording's own
    ``ft_flip_wrench_sign``); ``estimate_contact_offsets``: the contact sensors' offsets are
    parameters too (:attr:`~inertia_id_ros.core.whole_body_model.FTSensor.estimate_offset`). A
    ``fixed`` base is held at ``fixed_frame`` (default the URDF root) tilted by ``fixed_tilt``
    (roll, pitch; rad), or with IMU data and ``imu_tilt`` ``correct``, by the IMU's
    (:func:`imu_fixed_tilt`; the model's ``fixed_tilt`` is then the IMU's; ``check``: the IMU is
    not used) (:meth:`~WholeBodyModel.fixed_base_motion`). Raises :class:`DataError` (naming the
    item) for a sensor kind that is neither ``contact`` nor ``internal``, an IMU, F/T or fixed
    frame not in the URDF, a flipped frame that is not a sensor's, joints missing or unknown, a
    floating base without IMU data, a fixed frame or tilt with a base that is not fixed, or a
    URDF that cannot be read."""
    source = recording.source
    if imu_tilt not in IMU_TILT_USES:
        raise DataError(f"imu_tilt {imu_tilt!r} is not one of {IMU_TILT_USES}")
    sensors = _ft_sensors(recording, flip_wrench_sign, estimate_contact_offsets)
    if base == "floating" and not recording.imu:
        raise DataError(
            f"{source}: a floating base needs the IMU keys {', '.join(IMU_KEYS)} and 'imu_frame'"
        )
    imu_frame = recording.imu_frame if recording.imu else None
    try:
        model = WholeBodyModel.from_urdf(
            urdf, base, sensors, imu_frame, bodies, fixed_frame, fixed_tilt
        )
    except FrameNotFound as e:
        what = (
            "IMU frame"
            if e.name == imu_frame
            else "fixed frame"
            if e.name == fixed_frame
            else "F/T frame"
        )
        raise DataError(f"{source}: {what} {e.name!r} is not in the URDF {urdf}") from None
    except ConfigError as e:
        raise DataError(f"{source}: {e}") from None
    except (OSError, ValueError) as e:  # an unreadable URDF (load_model names the file)
        raise DataError(str(e)) from None
    keep, q, dq, ddq, effort = _joint_samples(recording, model, half_width)
    if model.base == "fixed":
        if recording.imu and imu_tilt == "correct":
            tilt = _mean_tilt(model, q, dq, ddq, recording.imu["imu_linear_acceleration"][keep])
            model = dataclasses.replace(model, fixed_tilt=tuple(tilt.tolist()))
        motion = model.fixed_base_motion(q, dq, ddq)
    elif recording.imu:
        gyro = recording.imu["imu_angular_velocity"]
        alpha = gyro_derivative(recording.states.t, gyro, gyro_half_width or half_width)[keep]
        motion = model.base_motion_from_imu(
            q, dq, ddq, gyro[keep], recording.imu["imu_linear_acceleration"][keep], alpha
        )
    else:  # suspended
        motion = BaseMotion.at_rest(len(keep))
    return model, WholeBodySamples(q, dq, ddq, motion, recording.ft_wrench[keep], effort)


def _ft_sensors(
    recording: WholeBodyRecording, flip_wrench_sign: Sequence[str], estimate_contact_offsets: bool
) -> list[FTSensor]:
    """The recording's F/T sensors as the model takes them (see :func:`whole_body_inputs`);
    a kind neither ``contact`` nor ``internal``, or a flipped frame that is not a sensor's, is a
    :class:`DataError`."""
    source = recording.source
    bad = [(f, k) for f, k in zip(recording.ft_frames, recording.ft_types) if k not in SENSOR_KINDS]
    if bad:
        raise DataError(
            f"{source}: F/T sensor {bad[0][0]!r} has type {bad[0][1]!r}, neither "
            "'contact' nor 'internal'"
        )
    unknown = [f for f in flip_wrench_sign if f not in recording.ft_frames]
    if unknown:
        raise DataError(
            f"{source}: no F/T sensor at {unknown[0]!r} to flip (sensors: "
            f"{list(recording.ft_frames)})"
        )
    flips = recording.ft_flip_wrench_sign or (False,) * len(recording.ft_frames)
    sensors = [
        FTSensor(
            f,
            k,
            estimate_offset=True if estimate_contact_offsets else None,
            flip_wrench_sign=flip or f in flip_wrench_sign,
        )
        for f, k, flip in zip(recording.ft_frames, recording.ft_types, flips)
    ]
    return sensors


def _joint_samples(
    recording: WholeBodyRecording, model: WholeBodyModel, half_width: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``(keep, q, dq, ddq, effort)``: the recording's samples kept (indices) and their joints
    (N, n) in the model's order, differentiated over ``half_width`` s (``effort`` ``None`` when
    not recorded). Raises :class:`DataError` for joints missing or unknown."""
    states = recording.states
    missing = [j for j in model.joint_names if j not in states.joint_names]
    unknown = [j for j in states.joint_names if j not in model.joint_names]
    if missing or unknown:
        raise DataError(
            f"{recording.source}: joint_names "
            + "; ".join(
                part
                for part in (
                    f"lacks the URDF's joints {missing}" if missing else "",
                    f"names joints not in the URDF {unknown}" if unknown else "",
                )
                if part
            )
        )
    states = with_derivatives(states, half_width)
    assert states.dq is not None and states.ddq is not None  # with_derivatives gives both
    keep = np.searchsorted(recording.states.t, states.t)
    order = [states.joint_names.index(j) for j in model.joint_names]
    effort = None if states.effort is None else states.effort[:, order]
    return keep, states.q[:, order], states.dq[:, order], states.ddq[:, order], effort


def imu_fixed_tilt(
    recording: WholeBodyRecording, model: WholeBodyModel, half_width: float = 0.05
) -> np.ndarray:
    """(2,) the fixed frame's (roll, pitch) (rad) the IMU of ``recording`` measures, the mean
    over the samples of its specific force with the joints' motion removed
    (:meth:`~WholeBodyModel.fixed_frame_acceleration_from_imu`): to check the given
    ``fixed_tilt`` (:data:`~inertia_id_ros.core.base_motion.TILT_CHECK_TOLERANCE`). Needs a
    fixed base and IMU data (:class:`DataError`)."""
    if model.base != "fixed" or not recording.imu or model.imu_frame is None:
        raise DataError(f"{recording.source}: the IMU's tilt needs a fixed base and IMU data")
    keep, q, dq, ddq, _ = _joint_samples(recording, model, half_width)
    return _mean_tilt(model, q, dq, ddq, recording.imu["imu_linear_acceleration"][keep])


def _mean_tilt(
    model: WholeBodyModel,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    specific_force: np.ndarray,
) -> np.ndarray:
    """(2,) (roll, pitch) of the fixed frame from the IMU's ``specific_force`` (N, 3)."""
    return tilt_from_up(
        model.fixed_frame_acceleration_from_imu(q, dq, ddq, specific_force).mean(axis=0)
    )


def whole_body_json(
    model: WholeBodyModel,
    fit: WholeBodyFit,
    method: str,
    solve_time: float,
    with_efforts: bool = False,
) -> dict[str, Any]:
    """The result JSON: ``bodies`` (every URDF link with mass: ``name``, ``frame`` (the link),
    ``theta``, ``fully_consistent``, ``min_pseudo_inertia_eig``, ``identifiability``,
    ``identified_fraction``), ``sensor_offsets`` {frame: [6]}, ``base_parameters`` (``rank``,
    ``parameters``, ``combinations``: the identified combinations as text, SI units),
    ``residual_rms``, ``samples``, ``solve_time_s``, ``weighting`` (``kind``; weighted: per
    noise group (:func:`~inertia_id_ros.chain.whole_body_fit.noise_groups`) ``weights`` and
    ``sigma``, ``iterations``, ``converged``); a fixed base: ``fixed_frame`` (``null``: the URDF
    root) and ``fixed_tilt`` (roll, pitch; rad)."""
    weighting: dict[str, Any] = {"kind": "none" if fit.weights is None else "channel"}
    if fit.weights is not None:
        weighting.update(fit.weights.as_json(noise_groups(model, with_efforts)[0]))
    bodies = links_json(
        model, fit.thetas, fit.identifiability.labels, fit.identifiability.identified_fraction
    )
    fixed = (
        {"fixed_frame": model.fixed_frame, "fixed_tilt": list(model.fixed_tilt)}
        if model.base == "fixed"
        else {}
    )
    return {
        "method": method,
        "base": model.base,
        **fixed,
        "bodies": bodies,
        "sensor_offsets": {frame: offset.tolist() for frame, offset in fit.offsets.items()},
        "base_parameters": {
            "rank": fit.identifiability.rank,
            "parameters": fit.identifiability.n_params,
            "combinations": list(fit.identifiability.base_parameters),
        },
        "residual_rms": fit.residual_rms,
        "samples": fit.n_samples,
        "solve_time_s": solve_time,
        "weighting": weighting,
    }


def links_json(
    model: WholeBodyModel,
    thetas: np.ndarray,
    labels: Sequence[str],
    identified_fraction: Sequence[float] | np.ndarray,
) -> list[dict[str, Any]]:
    """The result JSON's ``bodies``: every URDF link with mass, ``thetas`` (B, 10), ``labels``
    and ``identified_fraction`` (B,) of the identified ``model.bodies``, the URDF's inertial
    (:data:`URDF_PRIOR_LABEL`) for the others."""
    identified = {
        name: (theta, label, float(fraction))
        for name, theta, label, fraction in zip(model.bodies, thetas, labels, identified_fraction)
    }
    bodies = []
    for name, prior in zip(model.links, model.link_prior):
        theta, label, fraction = identified.get(name, (prior, URDF_PRIOR_LABEL, 0.0))
        entry = body_json(name, name, theta)
        entry["identifiability"] = label
        entry["identified_fraction"] = fraction
        bodies.append(entry)
    return bodies


def whole_body_estimate_json(model: WholeBodyModel, estimate: WholeBodyEstimate) -> dict[str, Any]:
    """An online estimate (:class:`~inertia_id_ros.online.whole_body_estimator.WholeBodyEstimate`)
    in the result JSON's shape (:func:`whole_body_json`): ``method``, ``base``, ``bodies``,
    ``sensor_offsets``, ``base_parameters`` (``rank``, ``parameters``), ``residual_rms``,
    ``samples``, ``solve_time_s``, ``weighting`` (``kind``; weighted: ``sigma`` per noise
    group), ``stopped_sensors`` (whose rows the solve dropped)."""
    return {
        "method": estimate.method,
        "base": model.base,
        "bodies": links_json(model, estimate.thetas, estimate.labels, estimate.identified_fraction),
        "sensor_offsets": {
            frame: np.asarray(offset).tolist() for frame, offset in estimate.offsets.items()
        },
        "base_parameters": {"rank": estimate.rank, "parameters": estimate.n_params},
        "residual_rms": estimate.residual_rms,
        "samples": estimate.n_samples,
        "solve_time_s": estimate.solve_time,
        "weighting": (
            {"kind": "channel", "sigma": dict(estimate.noise_sigma)}
            if estimate.noise_sigma
            else {"kind": "none"}
        ),
        "stopped_sensors": list(estimate.stopped_sensors),
    }
