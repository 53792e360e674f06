"""The whole-body mode offline (:mod:`inertia_id_ros.modes.whole_body`), beside it to keep its
module within size and light to import (numpy here only): its replay (:func:`replay_whole_body`),
the replay's report and CSV (:func:`whole_body_replay_report`, :func:`write_whole_body_csv`) and
its results' predictions of held-out data (:func:`evaluate_whole_body`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.chain.whole_body_fit import (
    fit_whole_body,
    normal_equations,
    prior_with_fitted_offsets,
)
from inertia_id_ros.core.whole_body_model import WholeBodyModel, WholeBodySamples
from inertia_id_ros.errors import InputError
from inertia_id_ros.formats.data import with_derivatives
from inertia_id_ros.formats.whole_body_log import (
    WholeBodyRecording,
    read_whole_body_file,
    whole_body_estimate_json,
    whole_body_inputs,
)
from inertia_id_ros.modes.base import NodeSettings
from inertia_id_ros.offline.plausibility import pinned_mass_findings
from inertia_id_ros.offline.replay import (
    ReplayInputs,
    ReplayLog,
    ReplayReport,
    ReplayUpdates,
    bodies_update_record,
    json_ready,
    replay_log,
    write_bodies_csv,
)
from inertia_id_ros.offline.summary import dropped_text, whole_body_table
from inertia_id_ros.offline.validation import DataSource, Prediction
from inertia_id_ros.online.session import Update
from inertia_id_ros.online.whole_body_config import WholeBodyEstimate
from inertia_id_ros.online.whole_body_session import WholeBodySession


def replay_whole_body(
    log: ReplayLog, session: WholeBodySession, settings: NodeSettings
) -> ReplayUpdates[WholeBodyEstimate]:
    """The joint-state, IMU and F/T topics (a described log: its F/T sensors by frame),
    each topic's wrenches to its sensor's frame; the findings: the links whose mass sits at
    its bound (not for ``ols``; the window keeps normal equations, not samples: no
    residual ratios)."""
    own = settings.mode_settings
    frames_of: dict[str, tuple[str, ...]] = {}
    for topic, frame in zip(own.ft_topics, own.ft_frames):
        frames_of[topic] = frames_of.get(topic, ()) + (frame,)
    inputs = ReplayInputs(
        settings.joint_states_topic,
        frames_of,
        session.add_wrench,
        own.imu_topic,
        session.add_imu if own.imu_topic else None,
    )
    model = session.estimator.model
    replay: ReplayUpdates[WholeBodyEstimate] = ReplayUpdates(
        **replay_log(session, log, settings.update_rate_hz, inputs, model.model),
        session=session,
    )
    final = replay.final
    if final is not None and final.method != "ols":
        prior = model.link_prior[[model.links.index(b) for b in final.link_names]]
        replay.findings = pinned_mass_findings(
            final.link_names, final.thetas[:, 0], np.asarray(prior)[:, 0]
        )
    return replay


def whole_body_replay_report(
    mode: str,
    replay: ReplayUpdates[WholeBodyEstimate],
    checked: Mapping[str, Any],
    elapsed: float,
) -> ReplayReport:
    """The report of a whole-body replay with an estimate, of the mode named ``mode``
    (``elapsed``: its wall time, s): fit-whole-body's result for the final estimate
    (:func:`~inertia_id_ros.formats.whole_body_log.whole_body_estimate_json`) with the
    replay's counters, the sensors' stops and resumptions (:func:`sensor_events`) and every
    update (:func:`whole_body_update_record`); the links as a table."""
    final = replay.final
    assert final is not None, "a report needs an estimate"
    model = replay.session.estimator.model
    result = whole_body_estimate_json(model, final)
    failed = dict(replay.session.failed_solves)
    events = sensor_events(replay.updates)
    document = {
        "mode": mode,
        **result,
        **checked,
        "source": replay.source,
        "update_rate_hz": replay.update_rate_hz,
        "window_sec": replay.session.estimator.config.window_sec,
        "start_time": replay.start_time,
        "received": replay.received,
        "dropped": replay.dropped,
        "failed_solves": failed,
        "sensor_events": [
            {"time": t, "kind": kind, "message": message} for t, kind, message in events
        ],
        "replay_time_s": elapsed,
        "updates": [
            {
                key: json_ready(value)
                for key, value in whole_body_update_record(update, replay.start_time).items()
            }
            for update in replay.updates
        ],
    }
    dropped = dropped_text(replay.dropped)
    inconsistent = sum(not body["fully_consistent"] for body in result["bodies"])
    lines = [
        f"replay (whole_body, {final.method}, {model.base} base): {len(replay.updates)} "
        f"updates at {replay.update_rate_hz:g} Hz over {replay.span:.1f} s of "
        f"{replay.source} in {elapsed:.1f} s, {len(replay.estimates)} with an estimate "
        f"(every link fully consistent), {sum(failed.values())} failed solves"
        + (f" {failed}" if failed else "")
        + (f"; dropped {dropped}" if dropped else ""),
        *[f"{t - replay.start_time:.2f} s: {message}" for t, _, message in events],
        f"first estimate after {replay.estimates[0].time - replay.start_time:.1f} s; final: "
        f"{final.n_samples} samples, {final.rank} of {final.n_params} base parameters, "
        f"solve {final.solve_time:.3f} s",
        *whole_body_table(result),
        f"residual rms {final.residual_rms:.4f}; inconsistent links: {inconsistent}",
    ]
    return ReplayReport(document, tuple(lines))


def write_whole_body_csv(replay: ReplayUpdates[WholeBodyEstimate], path: str | Path) -> None:
    """One row per update: :data:`WHOLE_BODY_CSV_COLUMNS`, then ``mass.<link>`` (kg)."""
    write_bodies_csv(
        path,
        WHOLE_BODY_CSV_COLUMNS,
        replay.session.estimator.model.bodies,
        replay.updates,
        lambda update: whole_body_update_record(update, replay.start_time, False),
    )


def evaluate_whole_body(
    result: Mapping[str, Any],
    held_out: DataSource,
    urdf: str | None,
    train: DataSource | None,
) -> dict[str, Prediction]:
    """The channels of ``held_out`` a whole-body ``result`` predicts: the rows of its samples
    (:func:`whole_body_recording`; the model of the result's ``base``, fixed frame and tilt):
    the base's wrench from the contacts and each internal sensor's (the joint torques instead
    on a fixed base without internal sensors), as the result's links and offsets predict them,
    the URDF's (no offset; with the offsets fitted, on ``train`` or else the held-out data) and
    OLS refitted on ``train``."""
    if urdf is None:
        raise InputError("validating a whole_body result needs --urdf (the robot)")
    recording = whole_body_recording(held_out)
    model, samples = _model_samples(result, recording, urdf, held_out.half_width)
    efforts = not model.channels(False)
    thetas = {body["name"]: body["theta"] for body in result["bodies"]}
    missing = [body for body in model.bodies if body not in thetas]
    if missing:
        raise InputError(f"the result has no bodies for links {missing}")
    offsets = result.get("sensor_offsets") or {}
    x = np.concatenate(
        [np.ravel([thetas[body] for body in model.bodies])]
        + [np.asarray(offsets.get(frame, np.zeros(6))) for frame in model.offset_sensors]
    )
    xs = {"fit": x, "urdf": model.prior}
    fitted = samples
    if train is not None:
        fitted = _model_samples(result, whole_body_recording(train), urdf, train.half_width)[1]
        equations = normal_equations(model, fitted, efforts)
        xs["ols"] = fit_whole_body(model, equations, "ols", 0.0, efforts).x
    if model.offset_sensors:
        xs["urdf_offsets"] = prior_with_fitted_offsets(model, fitted, efforts)
    t = with_derivatives(recording.states, held_out.half_width).t
    return predictions(model, samples, xs, efforts, t if t.size == len(samples) else None)


SENSOR_EVENTS = ("sensor_stopped", "sensor_resumed")
"""Warning kinds of a whole-body update that :func:`sensor_events` lists."""


def sensor_events(updates: list[Update]) -> list[tuple[float, str, str]]:
    """Every stop or resumption of an F/T sensor that ``updates`` reported: ``(time (s of bag
    time), kind (of :data:`SENSOR_EVENTS`), message)``."""
    return [
        (update.time, kind, message)
        for update in updates
        for kind, message in update.warnings
        if kind in SENSOR_EVENTS
    ]


WHOLE_BODY_CSV_COLUMNS = (
    "time",
    "elapsed",
    "status",
    "method",
    "n_samples",
    "residual_rms",
    "min_pseudo_inertia_eig",
    "rank",
    "n_params",
    "identified",
    "partly_identified",
    "prior_only",
    "stopped_sensors",
    "solve_time",
    "message",
)
"""Columns of :func:`write_whole_body_csv` (then ``mass.<link>`` per identified link, kg): bag
time and time since the first message (s), ``ok`` or why there is no estimate (numbers empty
then), the IMU samples in the window, residual RMS of the rows, the smallest pseudo-inertia
eigenvalue over the links (kg m^2), the base-parameter rank of the parameters, the links per
identifiability label, the sensors whose rows were dropped (space-separated), the solve time
(s), the update's message."""


def whole_body_update_record(
    update: Update, start_time: float, with_estimate: bool = True
) -> dict[str, Any]:
    """One whole-body update as a record with :data:`WHOLE_BODY_CSV_COLUMNS` keys (``None``
    where there is no estimate) and, with ``with_estimate`` and an estimate, ``thetas``
    {link: (10,)} and ``sensor_offsets`` {frame: (6,)} (JSON-ready)."""
    return bodies_update_record(
        update,
        start_time,
        WHOLE_BODY_CSV_COLUMNS,
        _whole_body_columns,
        _sensor_offsets if with_estimate else None,
    )


def _whole_body_columns(estimate: WholeBodyEstimate) -> dict[str, Any]:
    """A whole-body estimate's own columns: parameters, links per identifiability label, the
    sensors whose rows were dropped."""
    labels = list(estimate.labels)
    return {
        "n_params": int(estimate.n_params),
        "identified": labels.count("identified"),
        "partly_identified": labels.count("partly identified"),
        "prior_only": labels.count("prior only"),
        "stopped_sensors": " ".join(estimate.stopped_sensors),
    }


def _sensor_offsets(estimate: WholeBodyEstimate) -> dict[str, Any]:
    """``sensor_offsets`` {frame: (6,)} of a whole-body estimate (JSON-ready)."""
    return {
        "sensor_offsets": {
            frame: np.asarray(offset).tolist() for frame, offset in estimate.offsets.items()
        }
    }


def whole_body_recording(source: DataSource) -> WholeBodyRecording:
    """The whole-body recording of ``source``: an input description's
    (:meth:`~inertia_id_ros.formats.recording.Recording.whole_body`) or an NPZ of the
    package's layout (:func:`~inertia_id_ros.formats.whole_body_log.read_whole_body_file`); a
    bag names neither its F/T sensors' kinds nor its topics' sensors: :class:`InputError`."""
    if source.recording is not None:
        return source.recording.whole_body(source.half_width)
    if source.bag:
        raise InputError(
            f"{source.path}: a whole-body result is validated on an NPZ (--data) or an input "
            "description (--input), which name the F/T sensors' kinds; a bag does not"
        )
    return read_whole_body_file(source.path)


def _model_samples(
    result: Mapping[str, Any], recording: WholeBodyRecording, urdf: str, half_width: float
) -> tuple[WholeBodyModel, WholeBodySamples]:
    """The model of ``result`` (its ``base``, ``fixed_frame`` and ``fixed_tilt``; the offsets
    of the contact sensors estimated when it has any) and ``recording``'s samples."""
    offsets = result.get("sensor_offsets") or {}
    contacts = [f for f, k in zip(recording.ft_frames, recording.ft_types) if k == "contact"]
    return whole_body_inputs(
        recording,
        urdf,
        base=str(result.get("base", "floating")),
        half_width=half_width,
        fixed_frame=result.get("fixed_frame"),
        fixed_tilt=tuple(result.get("fixed_tilt") or (0.0, 0.0)),
        imu_tilt="check",  # the result's tilt, not the held-out IMU's
        estimate_contact_offsets=any(frame in offsets for frame in contacts),
    )


def predictions(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    xs: Mapping[str, np.ndarray],
    with_efforts: bool,
    t: np.ndarray | None = None,
) -> dict[str, Prediction]:
    """Each channel of ``model`` (:meth:`~WholeBodyModel.channels`) at every sample (``t``,
    s; default the sample index): measured (the rows' right-hand side) and predicted by each
    parameter vector of ``xs``."""
    channels = model.channels(with_efforts)
    measured = np.zeros((len(samples), len(channels)))
    predicted = {name: np.zeros_like(measured) for name in xs}
    chunk = 256
    for start in range(0, len(samples), chunk):
        part = samples.subset(slice(start, start + chunk))
        at = slice(start, start + len(part))
        for (rows, cols), (Yg, bg) in zip(
            model.row_groups(with_efforts), model.group_rows(part, with_efforts)
        ):
            measured[at, rows] = bg
            for name, x in xs.items():
                predicted[name][at, rows] = Yg @ np.asarray(x)[cols]
    time = np.arange(len(samples), dtype=float) if t is None else t
    return {name: Prediction(channels, time, measured, p) for name, p in predicted.items()}
