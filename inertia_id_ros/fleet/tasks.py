"""One run of a fleet identified (:func:`identify_run`, what a worker runs): the robot's mode's
offline job (:func:`~inertia_id_ros.jobs.fit_payload.fit_payload` or
:func:`~inertia_id_ros.jobs.fit_links.fit_links`) with the manifest's options, reduced to the
parameters a fleet follows, each with its standard error: a payload's mass (kg) and centre of
mass (m, sensor frame) and the F/T sensor's offsets (N, N m); a chain's joints' viscous
(N m s/rad) and Coulomb (N m) friction and its links' masses (kg). A run that fails (an
unreadable file, a refused or failed fit) is an outcome too, with its error and findings."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import InertiaIdError

if TYPE_CHECKING:
    from inertia_id_ros.formats.source import LogSource
    from inertia_id_ros.jobs.fit_links import LinksFit

OK = "ok"
REFUSED = "refused"
FAILED = "failed"
"""A run's status: identified; its fit refused by a check (findings say why); no result (an
error: a bad file, a solver failure, a lost worker)."""
OFFSET_NAMES = ("offset_fx", "offset_fy", "offset_fz", "offset_tx", "offset_ty", "offset_tz")
"""The F/T offsets' parameter names (N, N m)."""
PAYLOAD_PREFIX = "payload."
"""Parameters of the carried payload (compared per tool); the others belong to the robot."""


@dataclass(frozen=True)
class RunTask:
    """What a worker needs to identify one run (picklable): the ``robot``'s name, the ``run``'s
    key in the store, its ``path``, ``time`` and ``tool``, the robot's ``mode``, ``urdf``,
    ``sensor_frame`` and job ``options`` (by field name)."""

    robot: str
    run: str
    path: str
    time: str
    tool: str
    mode: str
    urdf: str
    sensor_frame: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Parameter:
    """One identified parameter: ``name``, ``value`` and standard error ``std`` (SI units; NaN:
    not identifiable from the run alone)."""

    name: str
    value: float
    std: float


@dataclass(frozen=True)
class RunRecord:
    """A run as the store's ``runs`` table holds it: the task's ``robot``, ``run``, ``time``,
    ``tool``, ``mode``; its ``status`` (:data:`OK`, :data:`REFUSED`, :data:`FAILED`), ``error``
    (one line; empty when identified), ``findings`` (their JSON), the package's ``version`` and
    ``elapsed`` (s)."""

    robot: str
    run: str
    time: str
    tool: str
    mode: str
    status: str
    error: str
    findings: tuple[dict[str, Any], ...]
    version: str
    elapsed: float


@dataclass(frozen=True)
class RunOutcome(RunRecord):
    """A run's result: its :class:`RunRecord` and the ``parameters`` it identified."""

    parameters: tuple[Parameter, ...] = ()


def identify_run(task: RunTask) -> RunOutcome:
    """Identify ``task``'s run with its mode's job; never raises for the run's own problems
    (they are the outcome's ``error``)."""
    from inertia_id_ros import __version__

    start = time.perf_counter()
    status, error = OK, ""
    findings: tuple[dict[str, Any], ...] = ()
    parameters: tuple[Parameter, ...] = ()
    try:
        if task.mode == "payload":
            status, findings, parameters = _payload(task)
        else:
            status, findings, parameters = _links(task)
        if status == REFUSED:
            error = next((f["message"] for f in findings if f["severity"] == "refuse"), "refused")
    except Exception as e:  # a run's failure is its outcome, whatever raised it
        status, error = FAILED, f"{type(e).__name__}: {e}".splitlines()[0]
        if isinstance(e, InertiaIdError):
            findings = tuple(f.as_json() for f in e.findings)
    return RunOutcome(
        task.robot,
        task.run,
        task.time,
        task.tool,
        task.mode,
        status,
        error,
        findings,
        __version__,
        time.perf_counter() - start,
        parameters,
    )


def log_source(path: str) -> LogSource:
    """The run at ``path`` as a job's source: an input description (``.yaml``/``.yml``), a bag
    (a folder, ``.mcap``, ``.db3``) or a file (NPZ, CSV)."""
    from pathlib import Path

    from inertia_id_ros.formats.source import LogSource

    suffix = Path(path).suffix.lower()
    if suffix in (".yaml", ".yml"):
        return LogSource(input=path)
    if suffix in (".mcap", ".db3") or Path(path).is_dir():
        return LogSource(bag=path)
    return LogSource(data=path)


def urdf_path(urdf: str) -> str:
    """``urdf`` itself if a file, else example-robot-data's URDF of that robot name."""
    from pathlib import Path

    from inertia_id_ros.core.robots import example_robot_urdf

    return urdf if Path(urdf).is_file() else str(example_robot_urdf(urdf))


def _payload(task: RunTask) -> tuple[str, tuple[dict[str, Any], ...], tuple[Parameter, ...]]:
    """``(status, findings, parameters)`` of a payload run."""
    import numpy as np

    from inertia_id_ros.core.covariance import com_covariance
    from inertia_id_ros.jobs.fit_payload import FitPayloadOptions, fit_payload

    options = FitPayloadOptions(**task.options)
    result = fit_payload(
        urdf_path(task.urdf), task.sensor_frame or "", log_source(task.path), options
    )
    findings = tuple(f.as_json() for f in result.findings)
    estimate = result.estimate
    if result.refused or estimate is None:
        return REFUSED, findings, ()
    com_std = np.sqrt(
        np.clip(np.diag(com_covariance(estimate.theta, estimate.covariance)), 0, None)
    )
    parameters = [Parameter(PAYLOAD_PREFIX + "mass", estimate.mass, float(estimate.theta_std[0]))]
    parameters += [
        Parameter(f"{PAYLOAD_PREFIX}com_{axis}", float(c), float(s))
        for axis, c, s in zip("xyz", estimate.com, com_std)
    ]
    if estimate.offset_std is not None:
        parameters += [
            Parameter(name, float(v), float(s))
            for name, v, s in zip(OFFSET_NAMES, estimate.sensor_offset, estimate.offset_std)
        ]
    return OK, findings, tuple(parameters)


def _links(task: RunTask) -> tuple[str, tuple[dict[str, Any], ...], tuple[Parameter, ...]]:
    """``(status, findings, parameters)`` of a joint-torque run."""
    from inertia_id_ros.jobs.fit_links import FitLinksOptions, fit_links

    options = FitLinksOptions(**task.options)
    result = fit_links(urdf_path(task.urdf), log_source(task.path), options)
    findings = tuple(f.as_json() for f in result.findings)
    if result.refused or result.estimate is None:
        return REFUSED, findings, ()
    return OK, findings, _link_parameters(result)


def _link_parameters(result: LinksFit) -> tuple[Parameter, ...]:
    """The joints' friction and the links' masses of a links fit, with standard errors from the
    fit's covariance (the per-joint sandwich of :mod:`inertia_id_ros.core.covariance`); a link on
    the consistency boundary has no standard error (NaN: the constraint, not the run, decided
    it)."""
    import numpy as np

    from inertia_id_ros.chain.links import link_channels
    from inertia_id_ros.core.covariance import parameter_covariance

    identification = result.estimate
    assert identification is not None and identification.model is not None
    model, fit = identification.model, identification.fit
    x = np.asarray(fit.x, dtype=float)
    covariance = parameter_covariance(
        link_channels(model, identification.data),
        x,
        n_bodies=model.n_joints,
        constrained=fit.method != "ols",
    )
    std = np.sqrt(np.clip(np.diag(covariance.matrix), 0.0, None))
    at_bound = {body["name"] for body in result.document["bodies"] if body.get("at_bound")}
    std[[i for i, n in enumerate(model.parameter_names) if n.rsplit(".", 1)[0] in at_bound]] = (
        np.nan
    )
    wanted = {f"{link}.m": f"{link}.mass" for link in model.link_names}
    wanted |= {f"{j}.{t}": f"{j}.{t}" for j in model.joint_names for t in ("viscous", "coulomb")}
    return tuple(
        Parameter(wanted[name], float(x[i]), float(std[i]))
        for i, name in enumerate(model.parameter_names)
        if name in wanted
    )
