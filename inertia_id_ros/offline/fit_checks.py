"""The checks each fit runs after it, from the rules of :mod:`~inertia_id_ros.offline.plausibility`
and :mod:`~inertia_id_ros.offline.volumes`: a payload's (residuals per sensor axis, bounding
volume, how well the data determine it), a link fit's (residuals and URDF gains per joint, link
volumes, pinned masses, base tilt) and a whole-body fit's (URDF gains per sensor, residuals per
sensor); and how well the data determine a payload: its base parameters, as JSON and in lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.core.gain_sums import GainSums
from inertia_id_ros.findings import NOTE, REFUSE, WARN, Finding, in_terms
from inertia_id_ros.offline.plausibility import (
    GAIN_CHUNK,
    at_bound_findings,
    determination_findings,
    flipped_sign_findings,
    negative_mass_findings,
    pinned_mass_findings,
    prior_mass_findings,
    residual_ratio_findings,
    tilt_finding,
    urdf_gain_findings,
)
from inertia_id_ros.offline.volumes import Volume, link_bounds, volume_findings


def payload_residual_findings(
    sensor: str, Y: np.ndarray, f: np.ndarray, theta: np.ndarray, offset: np.ndarray | None
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """:func:`residual_ratio_findings` of a payload fit, for the sensor's force and torque rows:
    ``Y`` (N, 6, >= 10) its regressor rows (the first 10 columns the body's), ``f`` (N, 6) the
    measured wrenches, ``theta`` (10,) and ``offset`` (6,) the fit's (``None``: not fitted). The
    unconstrained fits: least squares with the offset, and (when the fit had none) without."""
    Y = np.asarray(Y, dtype=float)[:, :, :10]
    f = np.asarray(f, dtype=float)
    n = f.shape[0]
    full = np.concatenate([Y, np.broadcast_to(np.eye(6), (n, 6, 6))], axis=2)

    def group_rms(residual: np.ndarray) -> np.ndarray:
        return np.sqrt([np.mean(residual[:, :3] ** 2), np.mean(residual[:, 3:] ** 2)])

    def ols_rms(rows: np.ndarray) -> np.ndarray:
        x = np.linalg.lstsq(rows.reshape(-1, rows.shape[2]), f.reshape(-1), rcond=None)[0]
        return group_rms(f - rows @ x)

    consistent = group_rms(f - Y @ theta - (0.0 if offset is None else offset))
    return residual_ratio_findings(
        [f"F/T sensor {sensor!r} forces", f"F/T sensor {sensor!r} torques"],
        consistent,
        ols_rms(full),
        group_rms(f),
        ("N", "N m"),
        "the wrench's sign (the sensor may report the wrench the payload exerts on it, the "
        "opposite of this tool's convention) or its frame is wrong.",
        None if offset is not None else ols_rms(Y),
        "payload_sign",
    )


def payload_fit_findings(
    sensor: str, Y: np.ndarray, f: np.ndarray, estimate: Any, with_offset: bool, volume: Volume
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """The findings of a payload ``estimate`` (an online
    :class:`~inertia_id_ros.online.payload_estimator.Estimate`) on the samples it was fitted to,
    ``Y`` (N, 6, >= 10) and ``f`` (N, 6): :func:`payload_residual_findings` (its offset if
    ``with_offset``), :func:`volume_findings` in ``volume`` and, but for ``ols``,
    :func:`determination_findings`; and the residual ratios."""
    offset = estimate.sensor_offset if with_offset else None
    findings, ratios = payload_residual_findings(sensor, Y, f, estimate.theta, offset)
    if estimate.method == "ols":
        findings += negative_mass_findings(
            "payload",
            float(estimate.theta[0]),
            "the wrench's sign (the sensor may report the wrench the payload exerts on it), "
            "its frame (--sensor-frame)"
            + (", or its offset (refit without --no-offset)" if not with_offset else "")
            + ".",
        )
    findings += volume_findings("payload", estimate.theta, volume)
    if estimate.method != "ols":
        findings += determination_findings("payload", estimate.theta, estimate.covariance)
    return findings, ratios


POINTS_LIMIT_CAUSE = (
    "the point masses, not the data, limit this fit (its solver says so): the points do not "
    "reach where the links' mass is. Use --method lmi, or more points."
)
"""Why a ``pointmass`` links fit that its points limit leaves more than least squares."""


def links_residual_findings(
    model: Any, data: Any, x: np.ndarray, prior_weight: float, points_limit: bool = False
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """:func:`residual_ratio_findings` of a fit-links result ``x`` on its training ``data``
    (:class:`~inertia_id_ros.chain.links.JointTorqueData`) per joint, against least squares
    with the same ``prior_weight`` and no constraint on the same model (``model``:
    :class:`~inertia_id_ros.chain.links.LinkModel`, joint offsets included): the ratio is what
    the consistency constraint alone costs. ``points_limit``: a ``pointmass`` fit whose points,
    not the data, limit it (its solver's ``approximation_limited``): the cause named is the
    points, and the finding warns (the data are not at fault)."""
    from inertia_id_ros.chain.link_fit import fit_links
    from inertia_id_ros.chain.links import torque_error

    ols = fit_links(model, data, method="ols", prior_weight=prior_weight)
    measured = model.measured_torques(model.in_joint_order(data).efforts)
    findings, ratios = residual_ratio_findings(
        [f"joint {name!r}" for name in model.joint_names],
        torque_error(model, x, data).per_joint,
        torque_error(model, ols.x, data).per_joint,
        np.sqrt(np.mean(measured**2, axis=0)),
        ["N m"] * model.n_joints,
        POINTS_LIMIT_CAUSE
        if points_limit
        else "the joint's torque sign, its torque constant or gear ratio, or its position "
        "(offset, direction, units) is wrong. Check the effort column's sign and scale.",
    )
    if points_limit:
        findings = [replace(f, severity=WARN) if f.severity == REFUSE else f for f in findings]
    return findings, ratios


def links_gain_findings(model: Any, data: Any) -> tuple[list[Finding], dict]:
    """:func:`urdf_gain_findings` per joint of a LinkModel on its ``data``: the measured torques
    against the URDF's (:attr:`LinkModel.prior`)."""
    from inertia_id_ros.chain.links import predict_torques

    measured = model.measured_torques(model.in_joint_order(data).efforts)
    predicted = predict_torques(model, model.prior, data)
    return urdf_gain_findings(
        [f"joint {name!r}" for name in model.joint_names],
        [GainSums.of(predicted[:, [j]], measured[:, [j]]) for j in range(model.n_joints)],
        ["N m"] * model.n_joints,
        "effort_sign",
    )


def payload_torque_sign_findings(
    links: Any, links_x: np.ndarray | None, data: Any, frame: str, estimate_offsets: bool
) -> list[Finding]:
    """A fit-payload-torques' torque signs per joint: against the URDF's links
    (:func:`links_gain_findings`) when the links are modelled (``links_x`` given), else (the
    difference of a loaded and an unloaded run, ``data``) against the payload at ``frame``:
    a joint whose torques of the other sign leave the unconstrained fit far less
    (:func:`flipped_sign_findings`)."""
    from inertia_id_ros.chain.payload_from_torques import PayloadTorqueModel, sign_flip_residuals

    if links_x is not None:
        return links_gain_findings(links, data)[0]
    model = PayloadTorqueModel(links, frame, estimate_offsets)
    (channels,) = model.channels(None, data)
    return flipped_sign_findings(
        list(links.joint_names),
        *sign_flip_residuals(channels),
        "effort_sign_runs",
    )


def window_gain_findings(
    joints: Sequence[str], Y: np.ndarray, f: np.ndarray, prior: np.ndarray
) -> list[Finding]:
    """:func:`urdf_gain_findings` per joint of a links window's rows ``Y`` (N, n, p) and torques
    ``f`` (N, n) (N m) against the prior's prediction ``Y @ prior`` (``prior`` (p,), the URDF's
    links and no friction): a joint whose torques are of the other sign."""
    predicted = np.asarray(Y, dtype=float) @ np.asarray(prior, dtype=float)
    measured = np.asarray(f, dtype=float)
    findings = urdf_gain_findings(
        [f"joint {name!r}" for name in joints],
        [GainSums.of(predicted[:, [j]], measured[:, [j]]) for j in range(len(joints))],
        ["N m"] * len(joints),
        "effort_sign",
    )[0]
    return list(in_terms(findings, "node"))


def links_fit_findings(
    identification: Any, urdf: str | Path, volumes: dict[str, Volume] | None = None
) -> tuple[list[Finding], list[str], dict[str, Any]]:
    """``(findings, lines, JSON)`` of a links fit (a
    :class:`~inertia_id_ros.chain.identify.LinkIdentification`): each joint's torques against
    the URDF's (:func:`links_gain_findings`), residuals per joint against the unconstrained fit
    (:func:`links_residual_findings`), the base's tilt, masses pinned at zero (but for ``ols``),
    the links' bounding ``volumes`` (``None``: :func:`link_bounds` of the URDF file ``urdf``);
    what the data determine, for stdout; the JSON's ``"residual_ratios"``, ``"urdf_gains"`` and
    ``"identifiability"``."""
    from inertia_id_ros.chain.identifiability import link_identifiability
    from inertia_id_ros.chain.identify import PRIOR_MASS_FACTOR, prior_mass_ratios
    from inertia_id_ros.core.inertia import check_consistency
    from inertia_id_ros.solvers.problem import on_consistency_bound

    fit, data, links = identification.fit, identification.data, identification.model
    findings, gains = links_gain_findings(links, data)
    points_limit = bool(fit.solution.info.get("approximation_limited"))
    ratio_findings, ratios = links_residual_findings(
        links, data, fit.x, fit.prior_weight, points_limit
    )
    findings += ratio_findings
    findings += links_tilt_findings(identification.tilt)
    if fit.method != "ols":
        prior = np.asarray(links.prior)[: 10 * len(links.link_names)].reshape(-1, 10)
        findings += pinned_mass_findings(links.link_names, fit.link_parameters[:, 0], prior[:, 0])
    else:
        for name, theta in zip(links.link_names, fit.link_parameters):
            findings += negative_mass_findings(
                name,
                float(theta[0]),
                "a joint's torque sign or scale, or its zero offset, above this link (the "
                "URDF gains name the joint); or the motion does not excite this link's mass.",
            )
    findings += prior_mass_findings(
        links.link_names,
        prior_mass_ratios(links, fit.x),
        fit.link_parameters[:, 0],
        PRIOR_MASS_FACTOR,
    )
    findings += at_bound_findings(
        [
            name
            for name, theta in zip(links.link_names, fit.link_parameters)
            if on_consistency_bound(check_consistency(theta).min_pseudo_inertia_eig)
        ]
    )
    volumes = link_bounds(urdf, links) if volumes is None else volumes
    for name, theta in zip(links.link_names, fit.link_parameters):
        if name in volumes:
            findings += volume_findings(name, theta, volumes[name])
    judged = link_identifiability(links, data, fit.x, identification.motions)
    findings += planar_findings(judged.still, judged.base.rank, judged.rank_with_still)
    checked = {
        "residual_ratios": ratios,
        "urdf_gains": gains,
        "identifiability": links_identifiability_json(judged),
    }
    return findings, links_identifiability_lines(judged), checked


def links_tilt_findings(tilt: Any) -> list[Finding]:
    """A links fit's base ``tilt`` (a :class:`~inertia_id_ros.chain.base_tilt.BaseTilt` or
    ``None``): :func:`tilt_finding` when it was kept, ``base_tilt_kept_level`` (note) when the
    motion did not tell it from the joints' zero offsets (none when it was level within its
    noise)."""
    from inertia_id_ros.chain.base_tilt import MAX_TILT

    if tilt is None:
        return []
    if not tilt.kept_level:
        return tilt_finding(tilt.roll, tilt.pitch, MAX_TILT)
    separation = tilt.separation
    if not separation.like_an_offset:
        return []  # level within the noise: the summary says so
    return [
        Finding(
            "base_tilt_kept_level",
            "base",
            NOTE,
            f"the base is kept level: the fit's best tilt (roll {np.degrees(tilt.roll):+.2f}, "
            f"pitch {np.degrees(tilt.pitch):+.2f} deg) is not told apart from a zero offset of "
            f"joint {separation.twin!r} on this motion ({100 * separation.share:.2g} % of its "
            "information left with the joints' offsets free).",
            {"roll_rad": float(tilt.roll), "pitch_rad": float(tilt.pitch), "t": separation.t},
            "To measure a tilt, record a motion that turns the first joints as well.",
        )
    ]


def planar_findings(
    still: Sequence[str], rank: int, rank_counting_noise: int | None
) -> list[Finding]:
    """``effectively_planar`` (note) naming the ``still`` joints (their motion within their
    encoder noise): the ``rank`` without them, and counting their noise as motion."""
    from inertia_id_ros.chain.stillness import planar_text

    if not still:
        return []
    return [
        Finding(
            "effectively_planar",
            "",
            NOTE,
            f"{planar_text(still)} (their motion is within their encoder noise): rank {rank} "
            f"without their noise, {rank_counting_noise} counting it as motion; the "
            "identifiable parameters are those without it.",
            {"rank": rank, "rank_counting_noise": rank_counting_noise},
            "Move these joints well beyond their encoder's resolution to identify what "
            "depends on them.",
        )
    ]


def links_identifiability_json(judged: Any) -> dict[str, Any]:
    """:func:`identifiability_json` of a :class:`~inertia_id_ros.chain.identifiability.
    LinkIdentifiability`'s base parameters with ``"still_joints"``, ``"rank_counting_noise"``
    (the rank with the still joints' noise counted as motion; ``null``: none still),
    ``"joint_motions"`` and ``"determination"`` (the parameters identified, ``|t| >= 3``, and
    poorly determined)."""
    return {
        **identifiability_json(judged.base),
        "still_joints": list(judged.still),
        "rank_counting_noise": judged.rank_with_still,
        "joint_motions": {m.name: m.as_json() for m in judged.motions},
        "determination": judged.determination.as_json(),
    }


def links_identifiability_lines(judged: Any, shown: int = 6) -> list[str]:
    """:func:`identifiability_lines` of a links fit judged against its noise: the still joints
    named, and the parameters identified (``|t| >= 3``) and poorly determined."""
    from inertia_id_ros.chain.stillness import planar_text
    from inertia_id_ros.core.significance import IDENTIFIED, IDENTIFIED_T, POORLY_DETERMINED

    lines = identifiability_lines(judged.base, shown)
    if judged.still:
        lines.insert(
            1,
            f"  {planar_text(judged.still)}: rank {judged.base.rank} without their noise "
            f"({judged.rank_with_still} counting it as motion)",
        )
    determined = judged.determination
    identified, poor = determined.named(IDENTIFIED), determined.named(POORLY_DETERMINED)
    lines.append(
        f"  identified (|t| >= {IDENTIFIED_T:g}): {len(identified)} parameters; poorly "
        f"determined (|t| < {IDENTIFIED_T:g}): {len(poor)}; the others prior only"
    )
    if poor:
        lines.append(f"  poorly determined: {_some(poor, shown)}")
    return lines


def _some(names: Sequence[str], shown: int) -> str:
    """At most ``shown`` of ``names``, and how many in all."""
    return ", ".join(names[:shown]) + (f", ... ({len(names)} in all)" if len(names) > shown else "")


def whole_body_gain_findings(
    model: Any, samples: Any, with_efforts: bool = False
) -> tuple[list[Finding], dict]:
    """:func:`urdf_gain_findings` per internal sensor's force and torque rows (and joint
    torques) of a whole-body recording against the URDF's links."""
    x = model.prior
    channels = model.channels(with_efforts)
    sums: dict[str, GainSums] = {}
    for start in range(0, len(samples), GAIN_CHUNK):
        chunk = samples.subset(slice(start, start + GAIN_CHUNK))
        for (rows, cols), (Yg, bg) in zip(
            model.row_groups(with_efforts), model.group_rows(chunk, with_efforts)
        ):
            block = channels[rows[0]].rsplit(".", 1)[0]
            if block == "base":
                continue  # the contacts' sum: no one sensor's sign
            body = cols < 10 * model.n_bodies  # the links' columns (then the offsets')
            predicted = Yg[:, :, body] @ x[cols[body]]
            parts = (
                [("torques", slice(None))]
                if block == "tau"
                else [("forces", slice(0, 3)), ("torques", slice(3, 6))]
            )
            for part, idx in parts:
                key = (
                    f"joint {channels[rows[0]].split('.', 1)[1]!r} torques"
                    if block == "tau"
                    else f"F/T sensor {block!r} {part}"
                )
                new = GainSums.of(predicted[:, idx], bg[:, idx])
                sums[key] = sums[key].add(new) if key in sums else new
    return urdf_gain_findings(
        list(sums),
        list(sums.values()),
        ["N" if key.endswith("forces") else "N m" for key in sums],
        "wrench_sign",
    )


def whole_body_residual_findings(
    model: Any, samples: Any, x: np.ndarray, prior_weight: float, with_efforts: bool = False
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """:func:`residual_ratio_findings` of a whole-body fit ``x`` per row group (the base's and
    each internal sensor's force and torque rows, the joint torques) against the unconstrained
    fit (``ols``, every offset fitted, the same ``prior_weight``)."""
    from inertia_id_ros.chain.whole_body_fit import fit_whole_body, prediction_errors_of

    ols = fit_whole_body(
        model, samples, "ols", prior_weight=prior_weight, with_efforts=with_efforts
    )
    errors = prediction_errors_of(model, [x, ols.x, np.zeros_like(x)], samples, with_efforts)
    subjects: list[str] = []
    units: list[str] = []
    consistent: list[float] = []
    unconstrained: list[float] = []
    measured: list[float] = []
    for group in errors[0].force:
        for part, unit in (("force", "N"), ("torque", "N m")):
            values = [getattr(e, part)[group] for e in errors]
            if not np.isfinite(values[0]):
                continue
            what = (
                "the base's (contacts') "
                if group == "base"
                else "the joint "
                if group == "tau"
                else f"F/T sensor {group!r} "
            )
            subjects.append(what + ("torques" if group == "tau" else part + "s"))
            for store, value in zip((consistent, unconstrained, measured), values):
                store.append(value)
            units.append(unit)
    return residual_ratio_findings(
        subjects,
        np.array(consistent),
        np.array(unconstrained),
        np.array(measured),
        units,
        "a sensor's sign (child_to_parent sensors such as the real iCub's), its frame or its "
        "kind (contact or internal) is wrong; the sensor named is the first to check.",
        remedy="sensor_sign",
    )


def payload_base_parameters(Y: np.ndarray, with_offset: bool) -> Any:
    """:class:`~inertia_id_ros.chain.base_parameters.BaseParameters` of a payload's regressor rows
    ``Y`` (N, 6, 10 or 16), decided on column-scaled normal equations (a relative tolerance fair to
    masses and inertias alike) and written in SI units."""
    import dataclasses

    from inertia_id_ros.chain.base_parameters import base_parameters_from_gram
    from inertia_id_ros.core.inertia import THETA_NAMES
    from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES

    names = list(THETA_NAMES) + (
        [f"offset_{c}" for c in WRENCH_CHANNEL_NAMES] if with_offset else []
    )
    rows = np.asarray(Y, dtype=float)[:, :, : len(names)].reshape(-1, len(names))
    gram = rows.T @ rows
    scales = 1.0 / np.sqrt(np.maximum(np.diag(gram), 1e-300))
    bp = base_parameters_from_gram(names, gram * np.outer(scales, scales))
    return dataclasses.replace(
        bp,
        combination=bp.combination * np.outer(scales[bp.independent], 1.0 / scales[bp.dependent]),
    )


def identifiability_json(bp: Any) -> dict[str, Any]:
    """``{"rank", "n_params", "base_parameters": [text], "not_excited": [...],
    "no_effect": [...]}`` of a :class:`~inertia_id_ros.chain.base_parameters.BaseParameters`:
    ``not_excited`` the standard parameters the data cannot fix individually."""
    return {
        "rank": int(bp.rank),
        "n_params": len(bp.names),
        "base_parameters": bp.expressions(),
        "not_excited": list(bp.unidentifiable),
        "no_effect": list(bp.no_effect),
    }


def identifiability_lines(bp: Any, shown: int = 6) -> list[str]:
    """What the data determine, for stdout: the rank, the directions not excited (at most
    ``shown`` names of each list; all are in the JSON)."""

    def some(names: Sequence[str]) -> str:
        return _some(names, shown)

    lines = [
        f"identifiability: rank {bp.rank} of {len(bp.names)} parameters (the base "
        "parameters are in the JSON)"
    ]
    if bp.no_effect:
        lines.append(f"  no effect on any measurement: {some(list(bp.no_effect))}")
    excited_in_combination = [n for n in bp.unidentifiable if n not in bp.no_effect]
    if excited_in_combination:
        lines.append(
            f"  not excited individually (only in combinations): {some(excited_in_combination)}"
        )
    return lines
