"""Validation of an identified model on held-out data: the machinery ``inertia-id validate``
and the fit commands' ``--validate`` share (:mod:`inertia_id_ros.jobs.validate`).

A result JSON is its mode's (:func:`~inertia_id_ros.modes.result_mode`: its ``"mode"``, else
the mode that recognises an older file); the mode's
:meth:`~inertia_id_ros.modes.Mode.evaluate` predicts the held-out data's channels with up to
four models and returns a :class:`Prediction` for each, keyed (:data:`MODELS`):

- ``"fit"``: the result (links: with the gravity it estimated, the base's tilt);
- ``"urdf"``: the URDF's inertials (links: no friction, offset or armature beyond the URDF's
  rotor data; a payload: the links the URDF has beyond the sensor frame, and no offset);
- ``"urdf_offsets"``: the URDF's inertials with the offsets fitted (least squares: the mean
  residual) on the training data, or on the held-out data without ``--train``. Offsets are
  nuisance parameters: this is the fair yardstick, not ``"urdf"``;
- ``"ols"``: plain least squares (no constraint, no prior, the offset fitted) refitted on the
  training data ``--train``, when given: the second yardstick.

Per channel (links: joint torques, N·m or N; payload: ``fx fy fz`` N, ``tx ty tz`` N·m; whole
body: the base's and each internal sensor's wrench) the error is the RMS of ``τ − τ̂`` and the
relative error ``100 ‖τ − τ̂‖ / ‖τ‖`` (Sousa & Cortesão 2014, Table 8), overall over all channels'
samples stacked (:func:`model_error`). Held-out data are read as the fit commands read them
(:class:`DataSource`, :mod:`inertia_id_ros.formats.data`): the recorded ``dq``/``ddq`` when both
are present, else differentiated (:func:`~inertia_id_ros.formats.data.with_derivatives`) with the
filter the fit chose (the result's ``"differentiation"``; :func:`differentiation_of`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.chain.links import JointTorqueData
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
from inertia_id_ros.formats.description import DESCRIPTION_SUFFIXES
from inertia_id_ros.formats.recording import Recording, load_recording
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.options import DEFAULT_HALF_WIDTH

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
    def from_path(cls, path: str, urdf: str | None = None, **options: Any) -> DataSource:
        """A bag when ``path`` is a directory or an ``.mcap``/``.db3`` file, an input
        description (all of its log, its runs joined; read for the URDF file ``urdf``) when a
        ``.yaml``/``.yml`` file, else a file."""
        if Path(path).suffix in DESCRIPTION_SUFFIXES:
            if urdf is None:
                raise InputError(f"{path}: an input description needs --urdf")
            source = LogSource(input=str(path))
            description = source.description(options.get("sensor_frame") or None)
            model = load_model(urdf)
            recording = load_recording(description, list(model.names)[1:], urdf)
            return cls(str(path), **options, recording=recording)
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
            unit = units[0].in_terms("description" if self.recording is not None else "flags")
            raise DataError(f"{self.path}: {unit.subject}: {unit.message} {unit.fix}".rstrip())
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


def ordered(predictions: dict[str, Prediction]) -> dict[str, Prediction]:
    """``predictions`` in :data:`MODELS` order (the report's)."""
    return {name: predictions[name] for name in MODELS if name in predictions}


def urdf_model(urdf: str | None, kind: str) -> Any:
    """The pinocchio model of the URDF file ``urdf`` that a ``kind`` result needs to predict;
    :class:`InputError` without one, or for a file that cannot be read."""
    if urdf is None:
        raise InputError(f"validating a {kind} result needs --urdf (the robot)")
    try:
        return load_model(urdf)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(str(e)) from None


def torque_data(states: JointStates) -> JointTorqueData:
    """The joint states (with velocities, accelerations and efforts) as joint-torque data;
    :class:`InputError` when the held-out data have no efforts."""
    if states.effort is None:
        raise InputError("the held-out data have no efforts")
    if states.dq is None or states.ddq is None:
        raise InputError("the held-out data have no velocities or accelerations")
    return JointTorqueData(states.q, states.dq, states.ddq, states.effort, states.joint_names)


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
