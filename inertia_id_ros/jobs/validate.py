"""The validate job: a result's prediction errors on held-out data, against the URDF's, the URDF's
with fitted offsets and plain least squares' (:mod:`inertia_id_ros.offline.validation`); and the
held-out check a fit job runs on its own fresh result (:func:`validate_fit`).

A result is its mode's (:func:`~inertia_id_ros.modes.result_mode`: the mode its ``"mode"`` names,
else the one that recognises an older file), and its mode predicts the held-out data
(:meth:`~inertia_id_ros.modes.Mode.evaluate`): this module names no mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import InputError
from inertia_id_ros.jobs.base import JobResult
from inertia_id_ros.options import DEFAULT_JOINT_STATES_TOPIC, DEFAULT_WRENCH_TOPIC

if TYPE_CHECKING:
    from inertia_id_ros.formats.recording import Recording
    from inertia_id_ros.formats.source import LogSource
    from inertia_id_ros.offline.validation import DataSource, ModelError, Prediction


@dataclass(frozen=True)
class Validation(JobResult[dict[str, "ModelError"]]):
    """A validation: ``estimate`` the error of each model (``fit``, ``urdf``, ``urdf_offsets``,
    ``ols``) on the held-out data, ``predictions`` their channels (for the plot)."""

    predictions: dict[str, Prediction] = field(default_factory=dict)

    def write_png(self, path: str | Path) -> None:
        """The measured and predicted channels, plotted into the PNG ``path``."""
        from inertia_id_ros.offline.validation import plot_predictions

        plot_predictions(self.predictions, path)


def validate(
    result: dict[str, Any],
    held_out: DataSource,
    urdf: str | None = None,
    train: DataSource | None = None,
) -> Validation:
    """The errors of ``result`` (a result JSON's content) on ``held_out`` as its mode predicts
    them, with OLS refitted on ``train`` when given (``urdf``: the robot's URDF file, for results
    that need it)."""
    from inertia_id_ros.modes import result_mode
    from inertia_id_ros.offline.validation import (
        format_errors,
        model_error,
        ordered,
        validation_json,
    )

    mode = result_mode(result)
    predictions = ordered(mode.evaluate(result, held_out, urdf, train))
    errors = {name: model_error(p) for name, p in predictions.items()}
    return Validation(
        errors,
        (),
        validation_json(errors),
        (format_errors(errors, held_out.path),),
        predictions,
    )


def validate_fit(
    document: dict[str, Any],
    urdf: str,
    source: LogSource,
    validate_path: str | None,
    train: Recording | None = None,
    held_out: Recording | None = None,
    sensor_frame: str = "",
    filter_half_width: float | None = None,
) -> Validation | None:
    """A fit job's held-out check of its fresh result ``document``: on the data at
    ``validate_path`` (the command line's ``--validate``), or on ``held_out``, the part of an
    input description the fit did not use; OLS refitted on the fit's own data (``train`` when
    loaded through a description, else ``source``). ``None`` without either."""
    from inertia_id_ros.offline.validation import DataSource, differentiation_of

    if validate_path is None and held_out is None:
        return None
    if validate_path is not None and held_out is not None:
        raise InputError(
            f"{held_out.source}: the description splits off held-out data; give "
            "--validate or the split, not both"
        )
    topics: dict[str, Any] = {
        "joint_states_topic": source.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
        "wrench_topic": source.wrench_topic or DEFAULT_WRENCH_TOPIC,
        "sensor_frame": sensor_frame,
        **differentiation_of(document, filter_half_width),
    }
    if train is not None:
        fit_data = DataSource(train.source, **topics, recording=train)
    else:
        fit_data = DataSource(source.path, source.bag is not None, **topics)
    if held_out is not None:
        evaluated = DataSource(f"{held_out.source} (held out)", **topics, recording=held_out)
    else:
        evaluated = DataSource.from_path(str(validate_path), urdf, **topics)
    return validate(document, evaluated, urdf, fit_data)
