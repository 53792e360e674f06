"""The replay of a payload and its report: both payload modes' (``payload``, from an F/T sensor,
and ``payload_torques``, from joint torques; :mod:`inertia_id_ros.modes.payload`,
:mod:`inertia_id_ros.modes.payload_torques`), beside them to keep their modules within size
and light to import (numpy here only).

**Replay** (:func:`replay_payload`, :func:`replay_payload_torques`, :func:`replay_bag`): a bag or a
described log through the node's payload session in bag time
(:func:`~inertia_id_ros.offline.replay.replay_log`), the F/T sensor's wrenches fed as the node's
payload mode feeds them (:func:`payload_replay_inputs`; joint states with efforts alone from joint
torques); every payload change is listed (:attr:`PayloadReplay.payload_changes`: the window then
kept only the new payload's samples), and the final estimate checked
(:func:`payload_replay_findings`; its COM against the payload's volume from joint torques).
Without a parameter file (``inertia-id replay BAG``, :func:`replay_bag`) the session is the node's
payload session for the parameters the command line gives, the sensor frame the wrenches' own.

**Report** (:func:`payload_replay_report`): the result JSON (as fit-payload's for the final
estimate, with every update: :func:`update_record`), the summary lines, the CSV
(:func:`write_csv`, :func:`csv_columns`) and the PNG
(:func:`~inertia_id_ros.offline.report.plot_replay`).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.core.covariance import com_covariance
from inertia_id_ros.core.inertia import THETA_NAMES, inertia_from_theta
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES
from inertia_id_ros.core.robots import load_model
from inertia_id_ros.errors import DataError, StartupError
from inertia_id_ros.findings import REFUSE, Finding, advice, in_terms
from inertia_id_ros.formats.data import (
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    JOINT_STATE_TYPE,
    ROBOT_DESCRIPTION_TOPIC,
    WRENCH_TYPE,
    iter_bag_messages,
)
from inertia_id_ros.formats.export import body_json
from inertia_id_ros.formats.recording import Recording
from inertia_id_ros.modes.base import read_ft_calibration_parameter
from inertia_id_ros.offline.fit_checks import payload_fit_findings
from inertia_id_ros.offline.replay import (
    ReplayInputs,
    ReplayLog,
    ReplayReport,
    ReplayUpdates,
    bag_robot_description,
    json_ready,
    replay_log,
)
from inertia_id_ros.offline.summary import body_lines, dropped_text
from inertia_id_ros.offline.volumes import Volume, payload_volume, volume_findings
from inertia_id_ros.online.change_detection import ChangeEvent
from inertia_id_ros.online.payload_estimator import Estimate, EstimatorConfig, PayloadEstimateBase
from inertia_id_ros.online.payload_session import (
    PayloadSession,
    PayloadTorqueSession,
    payload_session,
)
from inertia_id_ros.online.payload_torque_estimator import (
    PayloadTorqueEstimate,
    PayloadTorqueEstimatorConfig,
)
from inertia_id_ros.online.session import Update

PAYLOAD_BODY = "payload"
"""The name of the identified body in a payload replay's result."""


@dataclass
class PayloadReplay(ReplayUpdates[Estimate | PayloadTorqueEstimate]):
    """The updates of a payload replay (:class:`~inertia_id_ros.offline.replay.ReplayUpdates`),
    from an F/T sensor or from joint torques: the payload changes detected, the payload's frame
    (``sensor_frame``: the F/T sensor's, or the frame the payload is attached to), what each
    entry of the estimates' ``sensor_offset`` is (``offset_names``: the wrench channels, or the
    joints whose torque offsets moved) and the estimator's settings (``config``)."""

    payload_changes: list[ChangeEvent] = field(default_factory=list)
    sensor_frame: str = ""
    offset_names: tuple[str, ...] = WRENCH_CHANNEL_NAMES
    config: EstimatorConfig | PayloadTorqueEstimatorConfig = field(default_factory=EstimatorConfig)


def payload_replay_inputs(
    session: PayloadSession,
    sensor_frame: str,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    wrench_topic: str = DEFAULT_WRENCH_TOPIC,
) -> ReplayInputs:
    """The inputs of the node's payload mode: joint states, and the wrenches of the F/T sensor
    at ``sensor_frame`` on ``wrench_topic`` (``frame_id`` checked by the session)."""
    return ReplayInputs(
        joint_states_topic,
        {wrench_topic: (sensor_frame,)},
        lambda frame, t, wrench, frame_id: session.add_wrench(t, wrench, frame_id),
    )


def replay_bag(
    log: ReplayLog,
    sensor_frame: str | None = None,
    urdf: str | Path | None = None,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    wrench_topic: str = DEFAULT_WRENCH_TOPIC,
    update_rate_hz: float = 2.0,
    settings: Mapping[str, Any] | None = None,
) -> PayloadReplay:
    """Replay ``log`` (a rosbag2 directory or one ``.mcap``/``.db3`` file, or a recording)
    through the node's payload session for the F/T sensor frame ``sensor_frame`` (default: a
    bag's first wrench's ``frame_id``, a recording's only F/T sensor; see the module docstring);
    ``settings``: the node's parameters (keyword arguments of
    :func:`~inertia_id_ros.online.payload_session.payload_session`: window_sec, method,
    estimate_offset, flip_wrench_sign, detect_payload_change, ...; and the node's
    ``wrench_calibration_file``). The robot comes from the URDF file ``urdf``, else from a bag's
    last ``/robot_description``. Raises
    :class:`~inertia_id_ros.errors.DataError` (bag, recording), ``OSError`` or ``ValueError``
    (URDF, settings), :class:`~inertia_id_ros.errors.FrameNotFound` (sensor frame)."""
    recording = log if isinstance(log, Recording) else None
    bag = None if isinstance(log, Recording) else log
    if urdf is None:
        description = None if bag is None else bag_robot_description(bag)
        if description is None:
            raise DataError(
                f"{recording.source if recording else log}: no "
                f"{ROBOT_DESCRIPTION_TOPIC} in the bag; give the URDF"
            )
        model = load_model(urdf_xml=description)
    else:
        model = load_model(urdf_path=urdf)
    if sensor_frame is None and recording is not None:
        if len(recording.wrenches) != 1:
            raise DataError(
                f"{recording.source}: describes {len(recording.wrenches)} F/T "
                "sensors; give the sensor frame"
            )
        sensor_frame = next(iter(recording.wrenches))
    elif sensor_frame is None:
        assert bag is not None, "a log is a recording or a bag"
        sensor_frame = next(
            msg.header.frame_id
            for topic, _, msg in iter_bag_messages(
                bag, [(joint_states_topic, JOINT_STATE_TYPE), (wrench_topic, WRENCH_TYPE)]
            )
            if topic == wrench_topic
        )
        if not sensor_frame:
            raise DataError(f"{log}: the wrenches name no frame_id; give the sensor frame")
    settings = dict(settings or {})
    try:
        settings["wrench_calibration"] = read_ft_calibration_parameter(
            "wrench_calibration_file", settings.pop("wrench_calibration_file", ""), [sensor_frame]
        ).get(sensor_frame)
    except StartupError as error:
        raise DataError(str(error)) from None
    session = payload_session(SensorKinematics(model, sensor_frame), **settings)
    return replay_payload(log, session, update_rate_hz, joint_states_topic, wrench_topic)


def replay_payload(
    log: ReplayLog,
    session: PayloadSession,
    update_rate_hz: float,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    wrench_topic: str = DEFAULT_WRENCH_TOPIC,
    volume: Volume | None = None,
) -> PayloadReplay:
    """Replay ``log`` through a payload ``session`` built elsewhere (the node's, from its
    parameters), as :func:`replay_bag` does; ``volume``: the payload's bounding volume the
    final estimate is checked against (default
    :func:`~inertia_id_ros.offline.volumes.payload_volume`'s sphere)."""
    kinematics = session.estimator.kinematics
    inputs = payload_replay_inputs(
        session, kinematics.sensor_frame, joint_states_topic, wrench_topic
    )
    replay = PayloadReplay(
        **replay_log(session, log, update_rate_hz, inputs, kinematics.model),
        session=session,
        payload_changes=list(session.changes),
        sensor_frame=kinematics.sensor_frame,
        config=session.estimator.config,
    )
    replay.findings = payload_replay_findings(session, replay.final, volume or payload_volume())
    return replay


def payload_replay_findings(
    session: PayloadSession, final: PayloadEstimateBase | None, volume: Volume
) -> list[Finding]:
    """The plausibility findings of a replay's ``final`` estimate
    (:func:`~inertia_id_ros.offline.fit_checks.payload_fit_findings`, the payload in ``volume``)
    on the window's samples it was fitted to; none without an estimate or when the window
    restarted after it (a payload change)."""
    if final is None:
        return []
    estimator = session.estimator
    t, Y, f = estimator.window.samples()
    fitted = (t >= final.t_first) & (t <= final.t_last)
    if not fitted.any():
        return []
    findings, _ = payload_fit_findings(
        estimator.kinematics.sensor_frame,
        Y[fitted],
        f[fitted],
        final,
        estimator.config.estimate_offset,
        volume,
    )
    return list(in_terms(findings, "flags"))  # replay's own flags (--no-offset)


def replay_payload_torques(
    log: ReplayLog,
    session: PayloadTorqueSession,
    update_rate_hz: float,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    volume: Volume | None = None,
) -> PayloadReplay:
    """Replay ``log``'s joint states with efforts through a payload-torques ``session`` (the
    node's); the final estimate's COM checked against ``volume``, the payload's bounding volume
    (default :func:`~inertia_id_ros.offline.volumes.payload_volume`'s sphere;
    :func:`~inertia_id_ros.offline.volumes.volume_findings`, as ``fit-payload-torques``). The
    estimates' ``sensor_offset`` are the joints' torque offset changes (N m)."""
    estimator = session.estimator
    config = estimator.config
    replay = PayloadReplay(
        **replay_log(
            session, log, update_rate_hz, ReplayInputs(joint_states_topic), estimator.links.model
        ),
        session=session,
        payload_changes=list(session.changes),
        sensor_frame=config.frame,
        offset_names=tuple(estimator.joint_names),
        config=config,
    )
    final = replay.final
    flipped = [
        Finding("torque_sign", f"joint {joint!r}", REFUSE, why, {}, *advice("effort_sign", joint))
        for joint, why in estimator.flipped_joints()
    ]  # the fix in the terms of what configured the replay: the description, or the parameters
    replay.findings = list(
        in_terms(flipped, "description" if isinstance(log, Recording) else "node")
    )
    if final is not None:
        replay.findings += volume_findings("payload", final.theta, volume or payload_volume())
    return replay


def change_record(event: ChangeEvent) -> dict[str, Any]:
    """A payload change as a JSON-ready record: ``time`` (s of bag time, the stamp of the
    sample that raised it), ``onset`` (s), ``samples``, ``residual_mean`` (6,) (N, N m), and
    the ``message``."""
    return {
        "time": event.t_detected,
        "onset": event.t_onset,
        "samples": event.n_samples,
        "residual_mean": [float(v) for v in event.residual_mean],
        "message": str(event),
    }


# ---- report --------------------------------------------------------------------------------


def csv_columns(offset_names: Sequence[str] = WRENCH_CHANNEL_NAMES) -> tuple[str, ...]:
    """Columns of :func:`write_csv` for offsets named ``offset_names``: bag time and time since
    the first message (s), the status (``ok`` or why there is no estimate; numbers ``nan``
    then), the samples in the window, ``theta`` (SI), the offsets (F/T: N, N m; joints: N m),
    standard deviations of ``theta``, COM and its standard deviations (m, the payload's frame),
    consistency margin (kg m^2), residual RMS, excitation condition number, solve time (s)."""
    return (
        ("time", "elapsed", "status", "method", "n_samples")
        + THETA_NAMES
        + tuple(f"offset_{n}" for n in offset_names)
        + tuple(f"std_{n}" for n in THETA_NAMES)
        + ("com_x", "com_y", "com_z")
        + ("std_com_x", "std_com_y", "std_com_z")
        + ("min_pseudo_inertia_eig", "residual_rms", "condition_number", "solve_time")
    )


CSV_COLUMNS = csv_columns()
"""Columns of :func:`write_csv` of a payload replay from an F/T sensor."""


def update_record(
    update: Update, start_time: float, offset_names: Sequence[str] = WRENCH_CHANNEL_NAMES
) -> dict[str, Any]:
    """One update as a flat record with :func:`csv_columns` keys (JSON-ready)."""
    record: dict[str, Any] = dict.fromkeys(csv_columns(offset_names), float("nan"))
    record.update(
        time=update.time,
        elapsed=update.time - start_time,
        status=update.status,
        method="",
        n_samples=0,
    )
    estimate = update.estimate
    if estimate is None:
        return record
    com_std = np.sqrt(
        np.clip(np.diag(com_covariance(estimate.theta, estimate.covariance)), 0.0, None)
    )
    values = {
        "method": estimate.method,
        "n_samples": estimate.n_samples,
        **dict(zip(THETA_NAMES, estimate.theta)),
        **{f"offset_{n}": v for n, v in zip(offset_names, estimate.sensor_offset)},
        **{f"std_{n}": v for n, v in zip(THETA_NAMES, estimate.theta_std)},
        **{f"com_{a}": v for a, v in zip("xyz", estimate.com)},
        **{f"std_com_{a}": v for a, v in zip("xyz", com_std)},
        "min_pseudo_inertia_eig": estimate.min_pseudo_inertia_eig,
        "residual_rms": estimate.residual_rms,
        "condition_number": estimate.condition_number,
        "solve_time": estimate.solve_time,
    }
    record.update(
        {
            key: value
            if isinstance(value, str)
            else (int(value) if key == "n_samples" else float(value))
            for key, value in values.items()
        }
    )
    return record


def write_csv(replay: PayloadReplay, path: str | Path) -> None:
    """One row per update, columns :func:`csv_columns` of the replay's offsets."""
    with open(path, "w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=csv_columns(replay.offset_names))
        writer.writeheader()
        for update in replay.updates:
            writer.writerow(
                {
                    key: (f"{value:.12g}" if isinstance(value, float) else value)
                    for key, value in update_record(
                        update, replay.start_time, replay.offset_names
                    ).items()
                }
            )


def payload_replay_report(
    mode: str, replay: PayloadReplay, checked: Mapping[str, Any], truth: Any = None
) -> ReplayReport:
    """The report of a payload replay with an estimate, of the mode named ``mode``: the result
    JSON (fit-payload's keys for the final estimate, ``checked`` the findings' part, then the
    replay's counters, changes and updates), the summary (compared with ``truth``, an
    :class:`~inertia_id_ros.formats.export.IdentifiedBody`, when given)."""
    final = replay.final
    assert final is not None, "a report needs an estimate"
    body = body_json(PAYLOAD_BODY, replay.sensor_frame, final.theta)
    document = {
        "mode": mode,
        "method": final.method,
        "bodies": [body],
        **checked,
        "sensor_offset": final.sensor_offset.tolist(),
        "offset_names": list(replay.offset_names),
        "residual_rms": final.residual_rms,
        "samples": final.n_samples,
        "solve_time_s": final.solve_time,
        "source": replay.source,
        "update_rate_hz": replay.update_rate_hz,
        "window_sec": replay.config.window_sec,
        "start_time": replay.start_time,
        "received": replay.received,
        "dropped": replay.dropped,
        "payload_changes": [change_record(event) for event in replay.payload_changes],
        "updates": [
            {
                key: json_ready(value)
                for key, value in update_record(
                    update, replay.start_time, replay.offset_names
                ).items()
            }
            for update in replay.updates
        ],
    }
    dropped = dropped_text(replay.dropped)
    first = replay.estimates[0].time - replay.start_time
    lines = [
        f"replay: {len(replay.updates)} updates at {replay.update_rate_hz:g} Hz over "
        f"{replay.span:.1f} s of {replay.source}, {len(replay.estimates)} with an estimate"
        + (f"; dropped {dropped}" if dropped else ""),
        *[
            f"payload change at {event.t_detected - replay.start_time:.2f} s (onset "
            f"{event.t_onset - replay.start_time:.2f} s): the window restarted"
            for event in replay.payload_changes
        ],
        f"first estimate after {first:.1f} s; final ({final.method}, {final.n_samples} "
        f"samples, condition number {final.condition_number:.3g}), in "
        f"{replay.sensor_frame!r}:",
        *body_lines(body),
        f"  mass std {final.theta_std[0]:.2g} kg",
    ]
    if truth is not None:
        com_error = np.linalg.norm(final.com - inertia_from_theta(truth.theta)[1])
        lines.append(
            f"  vs truth: mass error {final.mass - truth.theta[0]:+.2g} kg, COM error "
            f"{1e3 * com_error:.3g} mm"
        )
    return ReplayReport(document, tuple(lines), ("csv", "json", "png"))


def plot_payload_replay(replay: PayloadReplay, path: str | Path, truth: Any = None) -> None:
    """The PNG report of a payload replay (:func:`~inertia_id_ros.offline.report.plot_replay`),
    the ``truth`` (an :class:`~inertia_id_ros.formats.export.IdentifiedBody`) its reference when
    given."""
    from inertia_id_ros.offline.report import plot_replay

    plot_replay(replay, path, None if truth is None else truth.theta)
