"""Plausibility checks before and after a fit: the usual mistakes, caught and named in plain words.

Physical-consistency constraints hide mistakes: a wrench of the wrong sign still has a consistent
best fit (a light body far away, or links at 0 kg). Each check here returns :class:`Finding` s:
``kind`` (what was checked), ``subject`` (the sensor, joint or link), ``severity`` (``refuse``:
the answer cannot be trusted and is not given; ``warn``: given, with the doubt stated),
``message`` (the likely cause and the fix, one sentence or two) and the ``figures`` behind it.

Checks and their thresholds (how they were chosen: docs/measurements.md, "Plausibility"):

- :func:`check_time_units`: the median time step fits milliseconds, microseconds or nanoseconds
  rather than seconds (``"time_units"``, refuse).
- :func:`check_angle_units`: joint positions outside the URDF limits by more than their span that
  fit them once divided by 180/π (``"degrees"``, refuse); outside the limits otherwise
  (``"joint_limits"``, warn); every revolute joint within its limits divided by 180/π
  (``"still"``, warn: radians read as degrees, or no motion); :func:`position_unit_findings`
  takes the limits and the revolute joints from a model.
- :func:`residual_ratio_findings`: per sensor or joint, the consistent fit's residual RMS over an
  unconstrained fit's with every offset fitted (``"residual_ratio"``): above
  :data:`RESIDUAL_RATIO_REFUSE` refuse, above :data:`RESIDUAL_RATIO_WARN` warn. No body explains
  the data: a sign, frame or offset is wrong.
- :func:`urdf_gain_findings`: a joint's torques, or a sensor's forces or torques, regressed on
  the URDF's prediction (offsets removed): a gain below :data:`URDF_GAIN_SIGN` is the opposite
  sign (``"urdf_sign"``, refuse), outside :data:`URDF_GAIN_RANGE` a scale (``"urdf_scale"``,
  warn); judged only where the URDF predicts enough (:data:`URDF_MIN_SHARE`).
- :func:`~inertia_id_ros.offline.volumes.volume_findings`: a body's COM, or its mass on
  average, outside the ellipsoid of a bounding volume (``"bounding_volume"``, warn; in
  :mod:`~inertia_id_ros.offline.volumes`).
- :func:`pinned_mass_findings`: a mass at its lower bound, zero (``"pinned_mass"``, warn): the
  constraint, not the data, decided it; such a link is never labelled "identified".
- :func:`link_filter_findings`: a link model (a fit-links result) fitted with a derivative
  filter over :data:`~inertia_id_ros.options.LINK_FILTER_RATIO` times the one a payload from
  joint torques is differentiated with, or under it by as much (``"link_filter"``, warn).
- :func:`negative_mass_findings`: an unconstrained fit's negative mass (``"negative_mass"``,
  warn);
- :func:`flipped_sign_findings`: a joint's torques whose other sign fits far better
  (``"torque_sign"``, refuse);
- :func:`prior_mass_findings`: a link mass more than a factor from its prior's
  (``"mass_far_from_prior"``, warn);
- :func:`tilt_finding`: a fitted base tilt over :data:`TILT_WARN_DEG` (``"base_tilt"``, warn).
- :func:`free_fall_finding`: a floating base without a contact sensor (``"free_fall"``, refuse
  unless the robot is declared in free fall).
- :func:`stance_tilt_finding`: a base rooted at a frame the IMU tilts over
  :data:`STANCE_MAX_TILT_DEG` (``"stance_tilt"``, refuse: the robot stands on another foot).
- :func:`determination_findings`: a payload on the consistency boundary (``"at_bound"``, warn)
  or whose mass or inertia is poorly determined (``"poorly_determined"``, warn, with the
  standard error).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from inertia_id_ros.core.gain_sums import (
    URDF_CORRELATION,
    URDF_GAIN_RANGE,
    URDF_GAIN_SIGN,
    URDF_MIN_SHARE,
    GainSums,
)
from inertia_id_ros.findings import NOTE, REFUSE, WARN, Finding, advice
from inertia_id_ros.options import (
    LINK_FILTER_RATIO,
)

if TYPE_CHECKING:
    pass


RESIDUAL_RATIO_WARN = 3.0
"""Consistent over unconstrained residual RMS (per sensor or joint, training data, the same
prior) above which a fit is warned about: clean inputs reach 1.0 (simulated payloads), 1.24
(simulated iCub), 2.56 (real KUKA, the last joint, whose 0.28 N m of torque is mostly friction)."""
RESIDUAL_RATIO_REFUSE = 5.0
"""... and above which it is refused: a flipped wrist F/T sensor gives 20-107, an unfitted 28 N
offset 70-158, the iCub's leg sensors' forgotten flips up to 5.9, a robot standing on the
ground fitted as in free fall up to 16."""
RESIDUAL_FLOOR = 1e-3
"""Residual RMS below this fraction of the measured signal's RMS count as this much (noise-free
simulations: both fits exact)."""
PINNED_MASS_FRACTION = 0.02
"""A link's mass counts as pinned at zero below this fraction of its URDF mass."""
PINNED_MASS_FLOOR = 1e-3
"""URDF masses below this (kg) are no mass: such links are not checked."""
TILT_WARN_DEG = 3.0
"""A fitted base tilt above this (deg) is warned about."""
POORLY_DETERMINED = {"mass": 0.1, "inertia": 0.5}
"""Relative standard errors above which a payload's mass or inertia (about the COM, Frobenius
norm) counts as poorly determined."""


# ---- inputs --------------------------------------------------------------------------------


def link_filter_findings(
    result: dict[str, Any],
    source: str,
    payload_half_width: float,
    used_half_width: float | None = None,
) -> list[Finding]:
    """``link_filter`` (warn) when the fit-links ``result`` (read from ``source``, the file named
    as the finding's subject) chose a derivative filter (its ``"differentiation"``) wider than
    :data:`~inertia_id_ros.options.LINK_FILTER_RATIO` times ``payload_half_width`` (s), the one
    a payload's inertia needs, or when the payload's data are differentiated with
    ``used_half_width`` (s; ``None``: with the links' filter) over that ratio times the links'. A
    wide filter flattens the accelerations and the links' fit makes up for it in their inertias;
    a payload, a small inertia on the last link, takes their error, and takes the difference
    when its own data are differentiated otherwise. A result without a filter (written by hand,
    or a simulator's truth) is not judged."""
    chosen = result.get("differentiation") or {}
    try:
        link_half_width = float(chosen.get("half_width_s") or 0.0)
    except (AttributeError, TypeError, ValueError):
        return []
    values = {"link_half_width_s": link_half_width, "payload_half_width_s": payload_half_width}
    if used_half_width is not None and used_half_width > LINK_FILTER_RATIO * link_half_width > 0:
        return [
            Finding(
                "link_filter",
                source,
                WARN,
                f"the links were fitted with a +-{link_half_width:.3f} s derivative "
                f"filter, and the payload's data are differentiated with +-"
                f"{used_half_width:.3f} s, {used_half_width / link_half_width:.1f} x as "
                "wide: the links' fit made up for its own filter in their inertias, so "
                "the payload's inertia takes the difference (tens of %; its mass and COM "
                "hardly). Differentiate with the links' filter (fit-payload-torques does "
                "without --filter-half-width; the node: torques_filter_half_width), or "
                f"refit the links with --filter-half-width {used_half_width:g}.",
                values | {"used_half_width_s": used_half_width},
            )
        ]
    if not link_half_width > LINK_FILTER_RATIO * payload_half_width:
        return []
    return [
        Finding(
            "link_filter",
            source,
            WARN,
            f"the links were fitted with a +-{link_half_width:.3f} s derivative filter, "
            f"{link_half_width / payload_half_width:.1f} x the +-"
            f"{payload_half_width:.3f} s a payload's inertia needs: a wide filter "
            "flattens the accelerations and the links' fit makes up for it in their "
            "inertias, so the payload's inertia can be off by up to tens of % (its mass "
            "and COM hardly). Refit the links with fit-links --filter-half-width "
            f"{payload_half_width:g}, or difference a loaded and an unloaded run of the "
            "same motion.",
            values,
        )
    ]


STANCE_MAX_TILT_DEG = 30.0
"""A frame a fixed base is rooted at (a stance sole) that the IMU tilts further than this from
level is not standing on the ground (floors and ramps are within a few degrees; the other sole
of the simulated iCub standing on one foot reads 92°)."""


def stance_tilt_finding(frame: str | None, imu_tilt: Sequence[float] | None) -> list[Finding]:
    """``stance_tilt`` (refuse) when the IMU's (roll, pitch) ``imu_tilt`` (rad) of the fixed
    base's ``frame`` (``None``: the URDF root, not judged) leaves it further than
    :data:`STANCE_MAX_TILT_DEG` from level."""
    if frame is None or imu_tilt is None:
        return []
    roll, pitch = (float(a) for a in imu_tilt)
    tilt = float(np.degrees(np.arccos(np.clip(np.cos(roll) * np.cos(pitch), -1.0, 1.0))))
    if tilt <= STANCE_MAX_TILT_DEG:
        return []
    return [
        Finding(
            "stance_tilt",
            f"frame {frame!r}",
            REFUSE,
            f"the IMU tilts {frame!r}, where the base is rooted, {tilt:.0f}° from level (roll "
            f"{np.degrees(roll):.1f}° pitch {np.degrees(pitch):.1f}°): a sole standing on the "
            "ground is near level, so the robot stands on another foot. Give that sole as "
            "--fixed-frame; if this frame really is tilted, --imu-tilt check with --fixed-tilt "
            "ROLL,PITCH.",
            {"tilt_deg": tilt},
        )
    ]


def free_fall_finding(base: str, sensor_kinds: Sequence[str], free_fall: bool) -> list[Finding]:
    """``free_fall`` (refuse) for a floating base with no contact sensor, unless ``free_fall``
    says the robot really touched nothing: then its base rows say every link is weightless."""
    if base == "fixed" or "contact" in sensor_kinds or free_fall:
        return []
    return [
        Finding(
            "free_fall",
            "base",
            REFUSE,
            f"a {base} base with no contact F/T sensor is fitted as a robot in free fall "
            "(no external wrench: the base rows pull every mass toward 0 kg). Give the "
            "feet's (or the stand's) F/T sensors as contact sensors, use --base fixed for "
            "a robot on a stand, --base fixed --fixed-frame SOLE for one standing on a foot "
            "(rooted at the stance sole), or --free-fall if it really touched nothing.",
        )
    ]


# ---- residuals -----------------------------------------------------------------------------


def residual_ratios(
    consistent_rms: np.ndarray, unconstrained_rms: np.ndarray, measured_rms: np.ndarray
) -> np.ndarray:
    """(S,) ``consistent_rms / unconstrained_rms`` per subject, both floored at
    :data:`RESIDUAL_FLOOR` times ``measured_rms`` (the measured signal's RMS)."""
    floor = RESIDUAL_FLOOR * np.asarray(measured_rms, dtype=float)
    return np.maximum(np.asarray(consistent_rms, dtype=float), floor) / np.maximum(
        np.asarray(unconstrained_rms, dtype=float), floor
    )


def residual_ratio_findings(
    subjects: Sequence[str],
    consistent_rms: np.ndarray,
    unconstrained_rms: np.ndarray,
    measured_rms: np.ndarray,
    units: Sequence[str],
    cause: str,
    same_columns_rms: np.ndarray | None = None,
    remedy: str = "",
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """``(findings, ratios)``: ``residual_ratio`` findings per subject (a sensor's force or
    torque rows, a joint) and every subject's ``{"ratio", "consistent_rms",
    "unconstrained_rms"}`` (for the result JSON). ``consistent_rms`` (S,) of the consistent fit,
    ``unconstrained_rms`` (S,) of an unconstrained least-squares fit with every offset fitted,
    ``measured_rms`` (S,) of the measured signal (:func:`residual_ratios`), ``units`` (S,).
    ``cause``: what to check, in words. ``same_columns_rms`` (S,): an unconstrained fit with the
    consistent fit's columns (without the offsets it left out); when it is as bad as the
    consistent fit, the cause is the missing offset. ``remedy``: the fix of the ``cause``, a
    :data:`~inertia_id_ros.findings.REMEDIES` key (none: the cause says it)."""
    consistent = np.asarray(consistent_rms, dtype=float)
    ratios = residual_ratios(consistent_rms, unconstrained_rms, measured_rms)
    table = {
        subject: {
            "ratio": float(r),
            "consistent_rms": float(c),
            "unconstrained_rms": float(u),
            "measured_rms": float(m),
        }
        for subject, r, c, u, m in zip(
            subjects, ratios, consistent, unconstrained_rms, measured_rms
        )
    }
    findings = []
    for k, subject in enumerate(subjects):
        ratio = float(ratios[k])
        if not ratio > RESIDUAL_RATIO_WARN:
            continue
        severity = REFUSE if ratio > RESIDUAL_RATIO_REFUSE else WARN
        figures = dict(table[subject])
        offset = False
        if same_columns_rms is not None:
            same = float(same_columns_rms[k])
            figures["unconstrained_without_offset_rms"] = same
            offset = (
                residual_ratios(
                    np.array([same]), unconstrained_rms[k : k + 1], measured_rms[k : k + 1]
                )[0]
                > RESIDUAL_RATIO_WARN
            )
        why = (
            "without an offset no fit, even unconstrained, explains them: the sensor has an offset."
            if offset
            else f"no physical body explains them: {cause}"
        )
        findings.append(
            Finding(
                "residual_ratio",
                subject,
                severity,
                f"the physically consistent fit leaves {ratio:.1f} times the residual of an "
                f"unconstrained fit ({consistent[k]:.3g} vs {unconstrained_rms[k]:.3g} {units[k]} "
                f"RMS); {why}",
                figures,
                *(advice("offset") if offset else advice(remedy) if remedy else ("", {})),
            )
        )
    return findings, table


GAIN_CHUNK = 400
"""Samples per block of whole-body rows (their stacked rows would take gigabytes)."""


def urdf_gain_findings(
    subjects: Sequence[str], sums: Sequence[GainSums], units: Sequence[str], remedy: str
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """``(findings, gains)``: per subject the gain and correlation of its measurements on the
    URDF's prediction (:class:`GainSums`; offsets removed), ``urdf_sign`` (refuse) below
    :data:`URDF_GAIN_SIGN`, ``urdf_scale`` (warn) outside :data:`URDF_GAIN_RANGE`, where the
    prediction is large enough (:data:`URDF_MIN_SHARE` of the largest of its ``units``).
    ``remedy``: the fix of a sign, a :data:`~inertia_id_ros.findings.REMEDIES` key."""
    findings, table = [], {}
    predicted = np.array([s.predicted_rms() for s in sums])
    largest = {unit: max(p for p, u in zip(predicted, units) if u == unit) for unit in units}
    for subject, s, unit, size in zip(subjects, sums, units, predicted):
        gain, correlation = s.gain()
        judged = size >= URDF_MIN_SHARE * largest[unit]
        table[subject] = {
            "gain": gain,
            "correlation": correlation,
            "predicted_rms": float(size),
            "judged": bool(judged),
        }
        figures = dict(table[subject])
        if not judged:
            continue
        if gain < URDF_GAIN_SIGN and correlation < -URDF_CORRELATION:
            findings.append(
                Finding(
                    "urdf_sign",
                    subject,
                    REFUSE,
                    f"the measurements are {gain:.2f} times what the URDF predicts (correlation "
                    f"{correlation:.2f}): the opposite sign. Sign?",
                    figures,
                    *advice(remedy, subject),
                )
            )
        elif correlation > URDF_CORRELATION and not (
            URDF_GAIN_RANGE[0] <= gain <= URDF_GAIN_RANGE[1]
        ):
            findings.append(
                Finding(
                    "urdf_scale",
                    subject,
                    WARN,
                    f"the measurements are {gain:.2f} times what the URDF predicts (correlation "
                    f"{correlation:.2f}): a scale (torque constant, gear ratio, units) or a URDF "
                    "far off?",
                    figures,
                )
            )
    return findings, table


# ---- bodies --------------------------------------------------------------------------------


def pinned_mass_findings(
    names: Sequence[str], masses: np.ndarray, prior_masses: np.ndarray
) -> list[Finding]:
    """``pinned_mass`` (warn) for each link whose fitted mass (kg) sits at its lower bound, 0:
    below :data:`PINNED_MASS_FRACTION` of a URDF mass of at least :data:`PINNED_MASS_FLOOR`
    (a link the URDF gives no mass says nothing when fitted at none)."""
    findings = []
    for name, mass, prior in zip(names, masses, prior_masses):
        if float(prior) >= PINNED_MASS_FLOOR and float(mass) < PINNED_MASS_FRACTION * float(prior):
            findings.append(
                Finding(
                    "pinned_mass",
                    name,
                    WARN,
                    f"mass {float(mass):.3g} kg (URDF {float(prior):.3g} kg) is pinned at its "
                    "bound, 0 kg: the constraint decided it, not the data. Not identified; a "
                    "sensor's sign or frame above this link, a free-fall fit, or too little motion "
                    "of this link drives masses there.",
                    {"mass": float(mass), "urdf_mass": float(prior)},
                )
            )
    return findings


def negative_mass_findings(name: str, mass: float, what: str) -> list[Finding]:
    """``negative_mass`` (warn) when an unconstrained (``ols``) fit gives body ``name`` a
    negative ``mass`` (kg): the constrained fits' diagnosis (``what``: the sign, frame or
    offset to check, in the user's terms) without their constraint to hide it."""
    if not mass < 0:
        return []
    return [
        Finding(
            "negative_mass",
            name,
            WARN,
            f"the unconstrained fit's mass is {mass:.3g} kg: no body has one. The likeliest "
            f"cause: {what}",
            {"mass": float(mass)},
            "Fix the sign or frame and refit; --method lmi keeps the estimate physical.",
        )
    ]


FLIPPED_SIGN_RATIO = 0.5
"""A joint whose torques of the other sign leave the unconstrained fit less than this share of
its residual RMS looks flipped."""


def flipped_sign_findings(
    joints: Sequence[str], rms: float, flipped: np.ndarray, remedy: str
) -> list[Finding]:
    """``torque_sign`` (refuse) for the joint (of ``joints``) whose torques of the other sign
    leave the unconstrained fit under :data:`FLIPPED_SIGN_RATIO` of its residual RMS ``rms``
    (N·m; ``flipped`` (n,) each joint's, of
    :func:`~inertia_id_ros.chain.payload_from_torques.sign_flip_residuals`); ``remedy``: the
    fix, a :data:`~inertia_id_ros.findings.REMEDIES` key."""
    if not joints or not rms > 0:
        return []
    j = int(np.argmin(flipped))
    if not flipped[j] < FLIPPED_SIGN_RATIO * rms:
        return []
    return [
        Finding(
            "torque_sign",
            f"joint {joints[j]!r}",
            REFUSE,
            f"its torques look flipped: with their sign turned the unconstrained fit leaves "
            f"{float(flipped[j]):.3g} N m of residual, as recorded {rms:.3g} N m.",
            {"residual_rms": float(rms), "flipped_residual_rms": float(flipped[j])},
            *advice(remedy, f"joint {joints[j]!r}"),
        )
    ]


def at_bound_findings(names: Sequence[str]) -> list[Finding]:
    """``at_bound`` (note) naming the links (``names``) on the consistency boundary
    (:func:`~inertia_id_ros.solvers.problem.on_consistency_bound`; ``at_bound`` in their
    ``bodies`` entries)."""
    if not names:
        return []
    return [
        Finding(
            "at_bound",
            "",
            NOTE,
            f"{len(names)} link(s) on the physical-consistency boundary ({', '.join(names)}): "
            "the constraint, not the data, decided part of each (usually its inertia); their "
            "standard errors understate that.",
            {"links": list(names)},
            "Move these links through more varied motion (inertia-id excite), or trust their "
            "prior more (a larger --prior-weight).",
        )
    ]


def prior_mass_findings(
    names: Sequence[str], ratios: np.ndarray, masses: np.ndarray, factor: float
) -> list[Finding]:
    """``mass_far_from_prior`` (warn) for each link whose fitted mass (``masses``, kg) is more
    than ``factor`` times from its prior's (``ratios``, either way, of
    :func:`~inertia_id_ros.chain.identify.prior_mass_ratios`); masses pinned at zero are
    :func:`pinned_mass_findings`'."""
    findings = []
    for name, ratio, mass in zip(names, ratios, masses):
        if ratio > factor and mass > 0:
            findings.append(
                Finding(
                    "mass_far_from_prior",
                    name,
                    WARN,
                    f"mass {float(mass):.3g} kg is {float(ratio):.1f} x from the prior's (URDF "
                    f"or CAD; more than {factor:g} x): the data, not a better model, are the "
                    "likelier cause (a torque's sign or scale, a still joint, a weak prior).",
                    {"mass": float(mass), "ratio": float(ratio)},
                    "Check the torques' signs and scales; refit with a larger --prior-weight "
                    "to keep the masses near the prior.",
                )
            )
    return findings


def tilt_finding(roll: float, pitch: float, limit: float | None = None) -> list[Finding]:
    """``base_tilt`` (warn) when the fitted tilt (``roll``, ``pitch`` rad) exceeds
    :data:`TILT_WARN_DEG`; ``limit`` (rad): the search's largest tilt, named when reached."""
    angle = float(np.degrees(np.arccos(np.clip(np.cos(roll) * np.cos(pitch), -1.0, 1.0))))
    if angle <= TILT_WARN_DEG:
        return []
    at_limit = limit is not None and max(abs(roll), abs(pitch)) >= limit - 1e-6
    return [
        Finding(
            "base_tilt",
            "base",
            WARN,
            f"the fit tilts the base's gravity by {angle:.1f} deg (roll "
            f"{np.degrees(roll):+.1f}, pitch {np.degrees(pitch):+.1f})"
            + (", the search's limit" if at_limit else "")
            + ": is the robot mounted tilted, or the URDF's base frame (or a joint "
            "offset) wrong? Mount it level or fix the URDF; --no-tilt keeps the "
            "URDF's gravity.",
            {"angle_deg": angle, "roll_rad": float(roll), "pitch_rad": float(pitch)},
        )
    ]


def determination_findings(name: str, theta: np.ndarray, covariance: np.ndarray) -> list[Finding]:
    """``at_bound`` (warn) when the body's pseudo-inertia sits on the consistency boundary
    (``λmin(J)`` within :data:`AT_BOUND_FACTOR` of the solvers' margin: the constraint decided
    a direction, and the covariance, projected onto the boundary, understates it);
    ``poorly_determined`` (warn) when the standard error (first-order, from ``covariance``
    (10, 10) of ``theta``) of the mass or of the inertia about the COM is above
    :data:`POORLY_DETERMINED` of its value."""
    from inertia_id_ros.core.covariance import inertia_com_norm_std
    from inertia_id_ros.core.inertia import check_consistency
    from inertia_id_ros.solvers.problem import AT_BOUND_FACTOR, CONSISTENCY_MARGIN

    theta = np.asarray(theta, dtype=float)
    mass = float(theta[0])
    if not mass > 0:
        return []
    findings = []
    eig = check_consistency(theta).min_pseudo_inertia_eig
    if eig <= AT_BOUND_FACTOR * CONSISTENCY_MARGIN:
        findings.append(
            Finding(
                "at_bound",
                name,
                WARN,
                f"the estimate sits on the physical-consistency boundary "
                f"(λmin(J) = {eig:.2g} kg m²): "
                "the constraint, not the data, decided part of it (usually the inertia; its "
                "standard errors understate that). Unless the body is a point mass or a thin rod, "
                "move it through more varied rotations (inertia-id excite).",
                {"min_pseudo_inertia_eig": eig},
            )
        )
    mass_std = float(np.sqrt(max(covariance[0, 0], 0.0)))
    if mass_std > POORLY_DETERMINED["mass"] * mass:
        findings.append(
            Finding(
                "poorly_determined",
                name,
                WARN,
                f"mass {mass:.4g} ± {mass_std:.2g} kg (one standard error) is poorly determined: "
                "move the sensor through more orientations, longer.",
                {"quantity": "mass", "value": mass, "std": mass_std},
            )
        )
    norm, std = inertia_com_norm_std(theta, covariance)
    if norm > 0 and std > POORLY_DETERMINED["inertia"] * norm:
        findings.append(
            Finding(
                "poorly_determined",
                name,
                WARN,
                f"inertia about the COM ({1e3 * norm:.3g} ± {1e3 * std:.2g} 1e-3 kg m², Frobenius "
                "norm, one standard error) is poorly determined: the motion hardly accelerates "
                "the payload's rotation; excite faster rotations (inertia-id excite) or use a "
                "prior (--prior, --method cad_prior).",
                {"quantity": "inertia", "value": norm, "std": std},
            )
        )
    return findings


# ---- what the data determine ---------------------------------------------------------------
