"""Validation of an identified model on held-out data: ``inertia-id validate`` and the fit
commands' ``--validate``.

A result JSON (:mod:`inertia_id_ros.cli`) is read by the evaluator of its *kind*
(:func:`result_kind`: the JSON's ``"kind"``, else ``"links"`` for a result with ``joints``
(fit-links) and ``"payload"`` for one with ``sensor_offset`` (fit-payload, replay)). An evaluator
predicts the held-out data's channels with up to three models and returns a :class:`Prediction`
for each, keyed:

- ``"fit"``: the result (links: with the gravity it estimated, the base's tilt);
- ``"urdf"``: the URDF's inertials (links: no friction, offset or armature beyond the URDF's
  rotor data, i.e. :attr:`LinkModel.prior`; payload: the links the URDF has beyond the sensor
  frame, :meth:`SensorKinematics.subtree_inertia`, and no F/T offset);
- ``"urdf_offsets"`` (payload): the URDF's inertials with the F/T offset fitted (least squares:
  the mean residual) on the training data, or on the held-out data without ``--train``. Offsets
  are nuisance parameters: this is the fair yardstick, not ``"urdf"``;
- ``"ols"``: plain least squares (no constraint, no prior, the offset fitted) refitted on the
  training data ``--train``, when given: the second yardstick.

Per channel (links: joint torques, N·m or N; payload: ``fx fy fz`` N, ``tx ty tz`` N·m) the error
is the RMS of ``τ − τ̂`` and the relative error ``100 ‖τ − τ̂‖ / ‖τ‖`` (Sousa & Cortesão 2014,
Table 8), overall over all channels' samples stacked (:func:`model_error`). Held-out data are read
as the fit commands read them (:mod:`inertia_id_ros.formats.data`): the recorded ``dq``/``ddq`` when
both are present, else differentiated (:func:`~inertia_id_ros.formats.data.with_derivatives`) with
the filter the fit chose (the result's ``"differentiation"``; :func:`differentiation_of`). Payload
joint states are interpolated (linearly) to the wrench stamps.

A new result kind plugs in with :func:`register_result_kind` (``kind`` and an
:data:`Evaluator`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.link_fit import fit_links
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, predict_torques, with_gravity
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES, payload_regressor_batch
from inertia_id_ros.core.robots import load_model
from inertia_id_ros.errors import DataError, InputError
from inertia_id_ros.formats.data import (
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    JointStates,
    PayloadRecording,
    read_joint_bag,
    read_joint_file,
    read_payload_bag,
    read_payload_file,
    with_derivatives,
)
from inertia_id_ros.formats.description import Recording
from inertia_id_ros.options import DEFAULT_HALF_WIDTH
from inertia_id_ros.solvers import Problem, solve

MODELS = ("fit", "urdf", "urdf_offsets", "ols")
"""The models evaluated, in report order."""


# ---- data ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataSource:
    """Recorded data as the fit commands take them: an NPZ/CSV file or (``bag``) a ROS 2 bag
    with its topics; ``half_width`` (s) and ``order`` of the differentiation when ``ddq`` is not
    recorded."""

    path: str
    bag: bool = False
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC
    wrench_topic: str = DEFAULT_WRENCH_TOPIC
    half_width: float = DEFAULT_HALF_WIDTH
    order: int = 2
    delay: float = 0.0
    """The efforts' delay (s) behind the motion (a fit-links result's ``"torque_delay"``)."""
    sensor_frame: str = ""
    """With ``recording``: the F/T sensor whose wrenches a payload result predicts."""
    recording: Recording | None = None
    """Data loaded through an input description (:mod:`inertia_id_ros.formats.description`): used
    instead of reading ``path``."""

    @classmethod
    def from_path(cls, path: str, **options: Any) -> DataSource:
        """A bag when ``path`` is a directory or an ``.mcap``/``.db3`` file, else a file."""
        bag = Path(path).is_dir() or Path(path).suffix in (".mcap", ".db3")
        return cls(str(path), bag, **options)

    def joint_states(self) -> JointStates:
        """Joint states with efforts, velocities and accelerations."""
        if self.recording is not None:
            states = self.recording.joint_states
        else:
            states = (
                read_joint_bag(self.path, self.joint_states_topic)
                if self.bag
                else read_joint_file(self.path)
            )
        return self._derived(states)

    def payload_recording(self) -> PayloadRecording:
        """Joint states (with velocities and accelerations) and wrenches."""
        if self.recording is not None:
            recording = self.recording.payload(self.sensor_frame)
        else:
            recording = (
                read_payload_bag(self.path, self.joint_states_topic, self.wrench_topic)
                if self.bag
                else read_payload_file(self.path)
            )
        return PayloadRecording(
            self._derived(recording.joint_states), recording.wrenches, recording.source
        )

    def _derived(self, states: JointStates) -> JointStates:
        from inertia_id_ros.formats.units import check_time_units

        units = check_time_units(states.t, "joint state stamps")  # before differentiating
        if units:
            raise DataError(f"{self.path}: {units[0].subject}: {units[0].message}")
        try:
            return with_derivatives(states, self.half_width, self.order, delay=self.delay)
        except DataError as e:
            raise DataError(f"{self.path}: {e}") from None


# ---- errors --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    """Measured and predicted channels of one model: ``t`` (N,) s, ``measured`` and
    ``predicted`` (N, c) in ``channels`` order (c names)."""

    channels: tuple[str, ...]
    t: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray


@dataclass(frozen=True)
class ModelError:
    """Prediction errors: ``rms`` and ``relative_error_percent`` overall, and per channel."""

    channels: tuple[str, ...]
    rms: float
    relative_error_percent: float
    rms_per_channel: np.ndarray
    relative_error_percent_per_channel: np.ndarray

    def as_json(self) -> dict[str, Any]:
        """``{"rms", "relative_error_percent", "per_channel": {name: rms},
        "relative_error_percent_per_channel": {name: %}}``."""
        return {
            "rms": self.rms,
            "relative_error_percent": self.relative_error_percent,
            "per_channel": dict(zip(self.channels, self.rms_per_channel.tolist())),
            "relative_error_percent_per_channel": dict(
                zip(self.channels, self.relative_error_percent_per_channel.tolist())
            ),
        }


def model_error(prediction: Prediction) -> ModelError:
    """RMS of ``measured - predicted`` and ``100 ‖measured - predicted‖ / ‖measured‖``, per
    channel (over samples) and overall (over all samples of all channels)."""
    error = prediction.measured - prediction.predicted
    n = error.shape[0]
    squares, measured = np.sum(error**2, axis=0), np.sum(prediction.measured**2, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = 100.0 * np.sqrt(squares / measured)
    return ModelError(
        prediction.channels,
        float(np.sqrt(squares.sum() / error.size)),
        float(100.0 * np.sqrt(squares.sum() / measured.sum())),
        np.sqrt(squares / n),
        relative,
    )


# ---- result kinds --------------------------------------------------------------------------


Evaluator = Callable[[dict, DataSource, "str | None", "DataSource | None"], dict[str, Prediction]]
"""``evaluate(result, held_out, urdf, train) -> {model: Prediction}``: ``result`` the parsed
JSON, ``urdf`` a URDF path or ``None``, ``train`` the training data or ``None`` (then no
``"ols"``). Raises a :class:`~inertia_id_ros.errors.CallerError` on inputs it cannot use."""

RESULT_KINDS: dict[str, Evaluator] = {}
"""Evaluators by result kind (:func:`register_result_kind`)."""


def register_result_kind(kind: str, evaluate: Evaluator) -> None:
    """Make results of ``kind`` (the JSON's ``"kind"``) validatable with ``evaluate``."""
    RESULT_KINDS[kind] = evaluate


def result_kind(result: dict) -> str:
    """The result's ``"kind"``; without one ``"links"`` (``joints``) or ``"payload"``
    (``sensor_offset``)."""
    if "kind" in result:
        return str(result["kind"])
    if "joints" in result:
        return "links"
    if "sensor_offset" in result:
        return "payload"
    raise InputError(
        "the result JSON has no 'kind', 'joints' or 'sensor_offset': not a result "
        "of fit-links, fit-payload or replay"
    )


def predictions_of(
    result: dict, held_out: DataSource, urdf: str | None = None, train: DataSource | None = None
) -> dict[str, Prediction]:
    """The predictions of the result's kind's evaluator, in :data:`MODELS` order."""
    kind = result_kind(result)
    if kind not in RESULT_KINDS:
        raise InputError(
            f"results of kind {kind!r} cannot be validated; known kinds: {sorted(RESULT_KINDS)}"
        )
    predictions = RESULT_KINDS[kind](result, held_out, urdf, train)
    return {name: predictions[name] for name in MODELS if name in predictions}


def _model(urdf: str | None, kind: str):
    if urdf is None:
        raise InputError(f"validating a {kind} result needs --urdf (the robot)")
    try:
        return load_model(urdf)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(str(e)) from None


# ---- links (fit-links) ---------------------------------------------------------------------


def link_model_of(result: dict, robot, states: JointStates) -> tuple[LinkModel, np.ndarray]:
    """``(model, x)``: the chain of a fit-links result (its joints, each with its Coulomb
    width; the other joints locked at their mean positions in ``states``; the URDF's gravity)
    and its ``x``."""
    joints = [entry["name"] for entry in result["joints"]]
    drives = {
        entry["name"]: JointDrive(coulomb_velocity=float(entry["coulomb_velocity"]))
        for entry in result["joints"]
    }
    try:
        links = LinkModel.from_model(robot, joints, states.mean_positions(), drives)
    except ValueError as e:
        raise InputError(str(e)) from None

    thetas = {body["name"]: body["theta"] for body in result["bodies"]}
    missing = [link for link in links.link_names if link not in thetas]
    if missing:
        raise InputError(f"the result has no bodies for links {missing} of joints {joints}")
    terms = {entry["name"]: entry for entry in result["joints"]}
    x = np.concatenate(
        [
            np.ravel([thetas[link] for link in links.link_names]),
            [
                terms[joint][term]
                for joint, drive in zip(links.joint_names, links.drives)
                for term in drive.terms
            ],
        ]
    )
    return links, x


def _torque_data(states: JointStates) -> JointTorqueData:
    if states.effort is None:
        raise InputError("the held-out data have no efforts")
    return JointTorqueData(states.q, states.dq, states.ddq, states.effort, states.joint_names)


def evaluate_links(
    result: dict, held_out: DataSource, urdf: str | None, train: DataSource | None
) -> dict[str, Prediction]:
    """Joint torques of a fit-links result (:func:`~inertia_id_ros.chain.links.predict_torques`),
    of the URDF and of OLS on ``train``."""
    robot = _model(urdf, "fit-links")
    states = held_out.joint_states()
    links, x = link_model_of(result, robot, states)
    data = _torque_data(states)
    try:
        measured = links.measured_torques(links.in_joint_order(data).efforts)
    except ValueError as e:
        raise InputError(f"{held_out.path}: {e}") from None
    models = {"fit": (fit_model(result, links), x), "urdf": (links, links.prior)}
    if train is not None:
        fit = fit_links(links, _torque_data(train.joint_states()), method="ols", prior_weight=0.0)
        models["ols"] = (links, fit.x)
    channels = links.joint_names
    return {
        name: Prediction(channels, states.t, measured, predict_torques(model, x_model, data))
        for name, (model, x_model) in models.items()
    }


def fit_model(result: dict, links: LinkModel) -> LinkModel:
    """``links`` with the result's ``"gravity"`` (the fit's estimated base tilt, root frame)
    when it has one. Only the fit predicts with it: the URDF and OLS are the references as the
    URDF gives them."""
    if result.get("gravity") is None:
        return links
    return with_gravity(links, np.asarray(result["gravity"], dtype=float))


# ---- payload (fit-payload, replay) ---------------------------------------------------------


def _payload_rows(
    kinematics: SensorKinematics, recording: PayloadRecording
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t (M,), Y (M, 6, 16), wrench (M, 6))`` at the wrench stamps within the joint states'
    span, joint states interpolated there."""
    states, wrenches = recording.joint_states, recording.wrenches
    keep = (wrenches.t >= states.t[0]) & (wrenches.t <= states.t[-1])
    if not keep.any():
        raise InputError(f"{recording.source}: no wrench within the joint states' time span")
    t = wrenches.t[keep]
    order = [states.joint_names.index(name) for name in kinematics.joint_names]

    def at(values: np.ndarray) -> np.ndarray:
        return np.stack([np.interp(t, states.t, values[:, j]) for j in order], axis=1)

    V, A = kinematics.compute_batch(at(states.q), at(states.dq), at(states.ddq))
    return t, payload_regressor_batch(V, A), wrenches.wrench[keep]


def _sensor_kinematics(robot, sensor_frame: str, states: JointStates) -> SensorKinematics:
    try:
        kinematics = SensorKinematics(robot, sensor_frame)
    except ValueError as e:
        raise InputError(str(e)) from None
    missing = [j for j in kinematics.joint_names if j not in states.joint_names]
    if missing:
        raise InputError(f"the data lack joints {missing} that move {sensor_frame!r}")
    return kinematics


def evaluate_payload(
    result: dict, held_out: DataSource, urdf: str | None, train: DataSource | None
) -> dict[str, Prediction]:
    """Wrenches of a fit-payload/replay result (``body_regressor(v, a_g) @ theta + offset``), of
    the URDF's links beyond the sensor frame and of OLS on ``train``."""
    robot = _model(urdf, "payload")
    if len(result["bodies"]) != 1:
        raise InputError(f"a payload result has one body, this one {len(result['bodies'])}")
    body = result["bodies"][0]
    recording = held_out.payload_recording()
    kinematics = _sensor_kinematics(robot, body["frame"], recording.joint_states)
    t, Y, wrench = _payload_rows(kinematics, recording)
    urdf = kinematics.subtree_inertia()
    models = {
        "fit": np.concatenate([body["theta"], result["sensor_offset"]]),
        "urdf": np.concatenate([urdf, np.zeros(6)]),
    }
    Y_offset, w_offset = Y, wrench
    if train is not None:
        _, Y_offset, w_offset = _payload_rows(kinematics, train.payload_recording())
        problem = Problem.from_regressor(Y_offset.reshape(-1, 16), w_offset.ravel(), n_bodies=1)
        models["ols"] = solve(problem, method="ols").x
    offset = np.mean(w_offset - Y_offset[:, :, :10] @ urdf, axis=0)  # the constant's LSQ fit
    models["urdf_offsets"] = np.concatenate([urdf, offset])
    return {name: Prediction(WRENCH_CHANNEL_NAMES, t, wrench, Y @ x) for name, x in models.items()}


register_result_kind("links", evaluate_links)
register_result_kind("payload", evaluate_payload)


# ---- report --------------------------------------------------------------------------------


def validation_json(errors: dict[str, ModelError]) -> dict[str, Any]:
    """``{model: ModelError.as_json()}`` (the ``--json`` file)."""
    return {name: error.as_json() for name, error in errors.items()}


def format_errors(errors: dict[str, ModelError], source: str) -> str:
    """A table: per channel and overall, the RMS and relative error of each model."""
    names = list(errors)
    width = {n: max(12, len(n) + 6) for n in names}  # rms; the % column 3 narrower
    channels = next(iter(errors.values())).channels
    header = f"{'channel':<16}" + "".join(
        f"{n + ' rms':>{width[n]}}{n + ' %':>{width[n] - 3}}" for n in names
    )
    lines = [f"validation on {source}: RMS error and 100·‖τ − τ̂‖/‖τ‖ per channel", header]
    for k, channel in enumerate(channels):
        lines.append(
            f"{channel:<16}"
            + "".join(
                f"{errors[n].rms_per_channel[k]:{width[n]}.4g}"
                f"{errors[n].relative_error_percent_per_channel[k]:{width[n] - 3}.2f}"
                for n in names
            )
        )
    lines.append(
        f"{'overall':<16}"
        + "".join(
            f"{errors[n].rms:{width[n]}.4g}{errors[n].relative_error_percent:{width[n] - 3}.2f}"
            for n in names
        )
    )
    if "urdf_offsets" in errors:
        lines.append(
            f"fit / URDF with its offsets fitted (the fair yardstick): "
            f"{errors['fit'].rms / errors['urdf_offsets'].rms:.3f}"
        )
    if "ols" in errors:
        lines.append(
            f"fit / unconstrained least squares: {errors['fit'].rms / errors['ols'].rms:.3f}"
        )
    else:
        lines.append(
            "(give the training data, --train, for the unconstrained least-squares yardstick)"
        )
    return "\n".join(lines)


def plot_predictions(predictions: dict[str, Prediction], path: str | Path) -> None:
    """PNG: per channel, measured and each model's prediction over time (left) and each model's
    error ``measured - predicted`` (right). Offscreen (matplotlib Agg)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    first = next(iter(predictions.values()))
    n = len(first.channels)
    figure = Figure(figsize=(12, 2.0 * n + 1))
    FigureCanvasAgg(figure)
    axes = figure.subplots(n, 2, squeeze=False, sharex=True)
    t = first.t - first.t[0]
    for k, channel in enumerate(first.channels):
        axes[k, 0].plot(t, first.measured[:, k], color="black", lw=1.0, label="measured")
        for name, p in predictions.items():
            axes[k, 0].plot(t, p.predicted[:, k], lw=0.8, label=name)
            axes[k, 1].plot(t, p.measured[:, k] - p.predicted[:, k], lw=0.8, label=name)
        axes[k, 0].set_ylabel(channel)
    axes[0, 0].set_title("measured and predicted")
    axes[0, 1].set_title("error (measured − predicted)")
    axes[0, 0].legend(fontsize="small", loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    axes[-1, 1].set_xlabel("time (s)")
    figure.tight_layout()
    figure.savefig(str(path), dpi=90)


def run(
    result: dict,
    held_out: DataSource,
    urdf: str | None = None,
    train: DataSource | None = None,
    json_out: str | None = None,
    png_out: str | None = None,
) -> str:
    """Evaluate, write ``json_out`` / ``png_out`` when given; returns the printed report."""
    predictions = predictions_of(result, held_out, urdf, train)
    errors = {name: model_error(p) for name, p in predictions.items()}
    lines = [format_errors(errors, held_out.path)]
    for path, write in (
        (
            json_out,
            lambda p: Path(p).write_text(json.dumps(validation_json(errors), indent=2) + "\n"),
        ),
        (png_out, lambda p: plot_predictions(predictions, p)),
    ):
        if path:
            try:
                write(path)
            except OSError as e:
                raise InputError(f"cannot write {path}: {e.strerror or e}") from None
            lines.append(f"wrote {path}")
    return "\n".join(lines)


def differentiation_of(
    result: dict, half_width: float | None, default: float = DEFAULT_HALF_WIDTH
) -> dict[str, Any]:
    """``{"half_width", "order", "delay"}`` to differentiate data for ``result``: ``half_width``
    (s) when given (order 2), else the filter the fit chose (its ``"differentiation"``), else
    ``default`` (s); ``delay`` (s) the efforts' delay the fit estimated (its
    ``"torque_delay"``, else 0), applied to every model's data alike."""
    delay = {"delay": float((result.get("torque_delay") or {}).get("delay_s", 0.0))}
    if half_width is not None:
        return {"half_width": half_width, **delay}
    chosen = result.get("differentiation") or {}
    if chosen.get("half_width_s"):
        return {"half_width": float(chosen["half_width_s"]), "order": int(chosen["order"]), **delay}
    return {"half_width": default, **delay}


def validate_after_fit(
    args, result: dict, train: Recording | None = None, held_out: Recording | None = None
) -> None:
    """``--validate DATA`` of fit-links/fit-payload, or the held-out part of an input
    description (``held_out``): print the validation of the fresh ``result`` on them, with OLS
    refitted on the fit's own data (``train`` when loaded through a description). Nothing
    without either."""
    if getattr(args, "validate", None) is None and held_out is None:
        return
    if getattr(args, "validate", None) is not None and held_out is not None:
        raise InputError(
            f"{held_out.source}: the description splits off held-out data; give "
            "--validate or the split, not both"
        )
    topics = {
        "joint_states_topic": args.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
        "wrench_topic": getattr(args, "wrench_topic", None) or DEFAULT_WRENCH_TOPIC,
        "sensor_frame": getattr(args, "sensor_frame", None) or "",
        **differentiation_of(result, args.filter_half_width),
    }
    if train is not None:
        fit_data = DataSource(train.source, **topics, recording=train)
    else:
        fit_data = (
            DataSource(args.bag, True, **topics)
            if args.bag
            else DataSource(args.data, False, **topics)
        )
    evaluated = (
        DataSource(f"{held_out.source} (held out)", **topics, recording=held_out)
        if held_out is not None
        else DataSource.from_path(args.validate, **topics)
    )
    print(run(result, evaluated, args.urdf, fit_data))
