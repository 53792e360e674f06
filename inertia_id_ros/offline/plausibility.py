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
- :func:`volume_findings`: a body's COM, or its mass on average, outside the ellipsoid of a
  bounding :class:`Volume` (``"bounding_volume"``, warn; what ``--bounding-ellipsoid``
  forbids); links' volumes from the URDF's collision geometry (:func:`link_volumes`; only
  those that hold the URDF's own inertial, :func:`volumes_holding`), a payload's a sphere or
  box about the sensor.
- :func:`pinned_mass_findings`: a mass at its lower bound, zero (``"pinned_mass"``, warn): the
  constraint, not the data, decided it; such a link is never labelled "identified".
- :func:`link_filter_findings`: a link model (a fit-links result) fitted with a derivative
  filter over :data:`~inertia_id_ros.options.LINK_FILTER_RATIO` times the one a payload from
  joint torques is differentiated with, or under it by as much (``"link_filter"``, warn).
- :func:`tilt_finding`: a fitted base tilt over :data:`TILT_WARN_DEG` (``"base_tilt"``, warn).
- :func:`free_fall_finding`: a floating base without a contact sensor (``"free_fall"``, refuse
  unless the robot is declared in free fall).
- :func:`determination_findings`: a payload on the consistency boundary (``"at_bound"``, warn)
  or whose mass or inertia is poorly determined (``"poorly_determined"``, warn, with the
  standard error).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from inertia_id_ros.findings import REFUSE, WARN, Finding
from inertia_id_ros.options import (
    DEFAULT_PAYLOAD_RADIUS,
    LINK_FILTER_RATIO,
    LINK_VOLUME_MARGIN,
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
URDF_GAIN_SIGN = -0.5
"""A sensor or joint whose measurements follow the URDF's prediction with a gain below this
(correlation below ``-URDF_CORRELATION``) has the opposite sign: refused."""
URDF_GAIN_RANGE = (1.0 / 3.0, 3.0)
"""Gains outside this range (correlation above ``URDF_CORRELATION``) are warned about (scale:
torque constant, gear ratio, units); real sensors' gains lie within 0.6-2.65."""
URDF_CORRELATION = 0.5
"""The gain is judged only where measurement and URDF prediction correlate at least this much
(else the URDF says too little about the channel)..."""
URDF_MIN_SHARE = 0.05
"""... and where the URDF predicts at least this share of the largest prediction in the same
unit (RMS about the mean): the real KUKA's wrist joints, predicted at under 1 % of the shoulder's
torque, follow the URDF with gains of -1.4 to -5 (its wrist inertials are off), a flipped joint
with -0.95."""
RESIDUAL_FLOOR = 1e-3
"""Residual RMS below this fraction of the measured signal's RMS count as this much (noise-free
simulations: both fits exact)."""
PINNED_MASS_FRACTION = 0.02
"""A link's mass counts as pinned at zero below this fraction of its URDF mass."""
PINNED_MASS_FLOOR = 1e-3
"""URDF masses below this (kg) are no mass: such links are not checked."""
TILT_WARN_DEG = 3.0
"""A fitted base tilt above this (deg) is warned about."""
AT_BOUND_FACTOR = 10.0
"""``λmin(J)`` up to this many times the solvers' consistency margin is on the boundary."""
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
    chosen = result.get("differentiation")
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
            "a robot on a stand, or --free-fall if it really touched nothing.",
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
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """``(findings, ratios)``: ``residual_ratio`` findings per subject (a sensor's force or
    torque rows, a joint) and every subject's ``{"ratio", "consistent_rms",
    "unconstrained_rms"}`` (for the result JSON). ``consistent_rms`` (S,) of the consistent fit,
    ``unconstrained_rms`` (S,) of an unconstrained least-squares fit with every offset fitted,
    ``measured_rms`` (S,) of the measured signal (:func:`residual_ratios`), ``units`` (S,).
    ``cause``: what to check, in words. ``same_columns_rms`` (S,): an unconstrained fit with the
    consistent fit's columns (without the offsets it left out); when it is as bad as the
    consistent fit, the cause is the missing offset."""
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
                residual_ratios([same], [unconstrained_rms[k]], [measured_rms[k]])[0]
                > RESIDUAL_RATIO_WARN
            )
        if offset:
            why = (
                "without an offset no fit, even unconstrained, explains them: the sensor "
                "has an offset. Fit it (drop --no-offset) or calibrate it out first."
            )
        else:
            why = f"no physical body explains them: {cause}"
        findings.append(
            Finding(
                "residual_ratio",
                subject,
                severity,
                f"the physically consistent fit leaves {ratio:.1f} times the residual of an "
                f"unconstrained fit ({consistent[k]:.3g} vs {unconstrained_rms[k]:.3g} {units[k]} "
                f"RMS); {why}",
                figures,
            )
        )
    return findings, table


GAIN_CHUNK = 400
"""Samples per block of whole-body rows (their stacked rows would take gigabytes)."""


@dataclass
class GainSums:
    """Running sums per subject to regress measured on predicted with an intercept per
    channel: ``n`` samples; per channel (C,) ``sp``, ``sm`` (sums), ``spp``, ``spm``, ``smm``
    (sums of products)."""

    n: int
    sp: np.ndarray
    sm: np.ndarray
    spp: np.ndarray
    spm: np.ndarray
    smm: np.ndarray

    @classmethod
    def of(cls, predicted: np.ndarray, measured: np.ndarray) -> GainSums:
        """The sums of ``predicted``, ``measured`` (N, C)."""
        p, m = np.asarray(predicted, dtype=float), np.asarray(measured, dtype=float)
        return cls(p.shape[0], p.sum(0), m.sum(0), (p * p).sum(0), (p * m).sum(0), (m * m).sum(0))

    def add(self, other: GainSums) -> GainSums:
        """The sums of both."""
        return GainSums(
            self.n + other.n,
            *(getattr(self, k) + getattr(other, k) for k in ("sp", "sm", "spp", "spm", "smm")),
        )

    def predicted_rms(self) -> float:
        """RMS of the prediction about each channel's mean."""
        n = max(self.n, 1)
        return float(np.sqrt(max(np.sum(self.spp - self.sp**2 / n), 0.0) / (n * self.sp.size)))

    def gain(self) -> tuple[float, float]:
        """``(gain, correlation)`` of measured on predicted, each channel centred."""
        n = max(self.n, 1)
        cpp = float(np.sum(self.spp - self.sp**2 / n))
        cpm = float(np.sum(self.spm - self.sp * self.sm / n))
        cmm = float(np.sum(self.smm - self.sm**2 / n))
        if cpp <= 0 or cmm <= 0:
            return float("nan"), 0.0
        return cpm / cpp, cpm / np.sqrt(cpp * cmm)


def urdf_gain_findings(
    subjects: Sequence[str], sums: Sequence[GainSums], units: Sequence[str], what: str
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """``(findings, gains)``: per subject the gain and correlation of its measurements on the
    URDF's prediction (:class:`GainSums`; offsets removed), ``urdf_sign`` (refuse) below
    :data:`URDF_GAIN_SIGN`, ``urdf_scale`` (warn) outside :data:`URDF_GAIN_RANGE`, where the
    prediction is large enough (:data:`URDF_MIN_SHARE` of the largest of its ``units``).
    ``what``: the fix, in words."""
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
                    f"{correlation:.2f}): the opposite sign. Sign? {what}",
                    figures,
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


def second_moments(theta: np.ndarray) -> np.ndarray:
    """``S = ∫ p pᵀ dm`` (3, 3) (kg m², body frame, about its origin) of ``theta`` (10,):
    ``S = ½ tr(I) 1 − I`` with ``I`` the rotational inertia about the origin."""
    t = np.asarray(theta, dtype=float)
    inertia = np.array([[t[4], t[5], t[7]], [t[5], t[6], t[8]], [t[7], t[8], t[9]]])
    return 0.5 * np.trace(inertia) * np.eye(3) - inertia


@dataclass(frozen=True)
class Volume:
    """A bounding volume in a body's frame (m): a box (``half_extents`` (3,), axes of the frame)
    or a sphere (``radius``) about ``center`` (3,); ``source`` says where it comes from."""

    center: np.ndarray
    half_extents: np.ndarray | None = None
    radius: float | None = None
    source: str = ""

    def describe(self) -> str:
        """E.g. ``"sphere of 0.5 m about [0, 0, 0]"``."""
        center = ", ".join(f"{c:.3g}" for c in self.center)
        if self.radius is not None:
            return f"sphere of {self.radius:g} m about [{center}] m"
        extents = ", ".join(f"{h:.3g}" for h in self.half_extents)
        return f"box of half-extents [{extents}] m about [{center}] m"

    def semi_axes(self) -> np.ndarray:
        """(3,) semi-axes of the smallest axis-aligned ellipsoid about ``center`` holding the
        volume (a box's: √3 times its half-extents)."""
        if self.radius is not None:
            return np.full(3, float(self.radius))
        return np.sqrt(3.0) * np.asarray(self.half_extents, dtype=float)

    def ellipsoid_matrix(self) -> np.ndarray:
        """4x4 ``Q`` of :meth:`semi_axes`' ellipsoid, for the bounding-ellipsoid constraint
        (:func:`inertia_id_ros.solvers.ellipsoid_matrix`)."""
        from inertia_id_ros.solvers import ellipsoid_matrix

        return ellipsoid_matrix(np.asarray(self.center, dtype=float), self.semi_axes())


def payload_volume(
    radius: float | None = None,
    half_extents: Sequence[float] | None = None,
    sources: tuple[str, str] = ("--payload-sphere", "--payload-box"),
) -> Volume:
    """A payload's bounding volume about the sensor frame's origin: a box of ``half_extents``
    (m) if given, else a sphere of ``radius`` (default :data:`DEFAULT_PAYLOAD_RADIUS`);
    ``sources`` name the sphere's and the box's setting in findings."""
    if half_extents is not None:
        return Volume(
            np.zeros(3), half_extents=np.asarray(half_extents, dtype=float), source=sources[1]
        )
    return Volume(
        np.zeros(3),
        radius=DEFAULT_PAYLOAD_RADIUS if radius is None else radius,
        source=sources[0] if radius is not None else "default",
    )


def volume_findings(name: str, theta: np.ndarray, volume: Volume) -> list[Finding]:
    """``bounding_volume`` (warn) when the COM of ``theta`` (10,) lies outside ``volume``'s
    ellipsoid (:meth:`Volume.semi_axes`) or the mass lies outside it on average (``Σ_i E[(p_i -
    c_i)²] / a_i² > 1``, i.e. ``tr(J Q) < 0``: what ``--bounding-ellipsoid`` forbids)."""
    theta = np.asarray(theta, dtype=float)
    mass = float(theta[0])
    if not mass > 0:
        return []
    center = np.asarray(volume.center, dtype=float)
    axes2 = volume.semi_axes() ** 2
    com = theta[1:4] / mass
    moments = second_moments(theta) / mass
    about = moments - np.outer(com, center) - np.outer(center, com) + np.outer(center, center)
    com_measure = float(np.sum((com - center) ** 2 / axes2))
    spread_measure = float(np.sum(np.diag(about) / axes2))
    com_out, spread_out = com_measure > 1.0, spread_measure > 1.0
    if not (com_out or spread_out):
        return []
    com_mm = ", ".join(f"{1e3 * c:.0f}" for c in com)
    what = (
        f"its COM [{com_mm}] mm lies outside"
        if com_out
        else f"its mass lies on average ({spread_measure:.2f} > 1) outside"
    )
    return [
        Finding(
            "bounding_volume",
            name,
            WARN,
            f"{what} the ellipsoid around the {volume.describe()} "
            f"({volume.source or 'given'}) for {mass:.4g} kg: a sign or frame mistake, "
            "or too little excitation? Check the sensor's sign and frame; "
            "--bounding-ellipsoid keeps the fit inside.",
            {
                "mass": mass,
                "com": com.tolist(),
                "com_outside": com_out,
                "spread_outside": spread_out,
                "com_measure": com_measure,
                "spread_measure": spread_measure,
            },
        )
    ]


def link_volumes(
    urdf: str | Path, links: Sequence[str], margin: float = LINK_VOLUME_MARGIN
) -> dict[str, Volume]:
    """Boxes in each of ``links``' frame from the URDF's collision geometry (pinocchio's
    ``buildGeomFromUrdf``, each shape's local bounding box), grown by ``margin`` (m) on every
    side (``package://`` meshes are looked for in the folders above the URDF). Links without
    collision geometry, and every link when the geometry cannot be loaded (meshes missing), have
    none."""
    import pinocchio as pin

    # package://NAME/... resolves in any folder above the URDF that holds NAME
    package_dirs = [str(parent) for parent in Path(urdf).resolve().parents]
    try:
        model = pin.buildModelFromUrdf(str(urdf))
        geometry = pin.buildGeomFromUrdf(
            model, str(urdf), pin.GeometryType.COLLISION, package_dirs=package_dirs
        )
    except (ValueError, RuntimeError, OSError):
        return {}
    corners: dict[str, list[np.ndarray]] = {}
    for obj in geometry.geometryObjects:
        frame = model.frames[obj.parentFrame]
        if frame.name not in links:
            continue
        shape = obj.geometry
        try:
            shape.computeLocalAABB()
            low, high = np.array(shape.aabb_local.min_), np.array(shape.aabb_local.max_)
        except (AttributeError, RuntimeError):
            continue
        box = np.array(
            [
                [x, y, z]
                for x in (low[0], high[0])
                for y in (low[1], high[1])
                for z in (low[2], high[2])
            ]
        )
        in_link = frame.placement.actInv(obj.placement)  # link frame <- geometry
        corners.setdefault(frame.name, []).append(box @ in_link.rotation.T + in_link.translation)
    volumes = {}
    for name, points in corners.items():
        points = np.vstack(points)
        low, high = points.min(axis=0) - margin, points.max(axis=0) + margin
        volumes[name] = Volume(
            0.5 * (low + high),
            half_extents=0.5 * (high - low),
            source=f"collision geometry grown by {margin:g} m",
        )
    return volumes


def volumes_holding(volumes: dict[str, Volume], priors: dict[str, np.ndarray]) -> dict[str, Volume]:
    """The ``volumes`` that hold their link's URDF inertial (``priors``: link -> theta (10,)):
    a volume the URDF's own body leaves is no yardstick (Collada meshes that the loader turns
    to another up axis, as the iCub's; inertias larger than the link, as the Panda's first)."""
    return {
        name: volume
        for name, volume in volumes.items()
        if name in priors and not volume_findings(name, priors[name], volume)
    }


def ellipsoids_of(volumes: dict[str, Volume], links: Sequence[str]) -> list[np.ndarray | None]:
    """Per link of ``links``, the 4x4 ``Q`` (link frame) of its volume's ellipsoid
    (:meth:`Volume.ellipsoid_matrix`), ``None`` for a link without one (unconstrained)."""
    return [volumes[name].ellipsoid_matrix() if name in volumes else None for name in links]


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
    from inertia_id_ros.solvers.problem import CONSISTENCY_MARGIN

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
        "opposite of this tool's convention) or its frame is wrong. Check --sensor-frame and the "
        "sensor's sign convention.",
        None if offset is not None else ols_rms(Y),
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
    findings += volume_findings("payload", estimate.theta, volume)
    if estimate.method != "ols":
        findings += determination_findings("payload", estimate.theta, estimate.covariance)
    return findings, ratios


def links_residual_findings(
    model: Any, data: Any, x: np.ndarray, prior_weight: float
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """:func:`residual_ratio_findings` of a fit-links result ``x`` on its training ``data``
    (:class:`~inertia_id_ros.chain.links.JointTorqueData`) per joint, against least squares
    with the same ``prior_weight`` and no constraint on the same model (``model``:
    :class:`~inertia_id_ros.chain.links.LinkModel`, joint offsets included): the ratio is what
    the consistency constraint alone costs."""
    from inertia_id_ros.chain.link_fit import fit_links
    from inertia_id_ros.chain.links import torque_error

    ols = fit_links(model, data, method="ols", prior_weight=prior_weight)
    measured = model.measured_torques(model.in_joint_order(data).efforts)
    return residual_ratio_findings(
        [f"joint {name!r}" for name in model.joint_names],
        torque_error(model, x, data).per_joint,
        torque_error(model, ols.x, data).per_joint,
        np.sqrt(np.mean(measured**2, axis=0)),
        ["N m"] * model.n_joints,
        "the joint's torque sign, its torque constant or gear ratio, or its position (offset, "
        "direction, units) is wrong. Check the effort column's sign and scale.",
    )


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
        "Flip the effort column's sign for this joint (the drive's convention).",
    )


def link_bounds(urdf: str | Path, model: Any) -> dict[str, Volume]:
    """The bounding volumes of a LinkModel's links (:func:`link_volumes` of the URDF file
    ``urdf``) that hold the model's own inertials (:func:`volumes_holding`)."""
    prior = np.asarray(model.prior)[: 10 * len(model.link_names)].reshape(-1, 10)
    return volumes_holding(link_volumes(urdf, model.link_names), dict(zip(model.link_names, prior)))


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
    from inertia_id_ros.chain.base_parameters import base_parameters
    from inertia_id_ros.chain.base_tilt import MAX_TILT

    fit, data, links = identification.fit, identification.data, identification.model
    findings, gains = links_gain_findings(links, data)
    ratio_findings, ratios = links_residual_findings(links, data, fit.x, fit.prior_weight)
    findings += ratio_findings
    if identification.tilt is not None:
        findings += tilt_finding(identification.tilt.roll, identification.tilt.pitch, MAX_TILT)
    if fit.method != "ols":
        prior = np.asarray(links.prior)[: 10 * len(links.link_names)].reshape(-1, 10)
        findings += pinned_mass_findings(links.link_names, fit.link_parameters[:, 0], prior[:, 0])
    volumes = link_bounds(urdf, links) if volumes is None else volumes
    for name, theta in zip(links.link_names, fit.link_parameters):
        if name in volumes:
            findings += volume_findings(name, theta, volumes[name])
    bp = base_parameters(links, data)
    checked = {
        "residual_ratios": ratios,
        "urdf_gains": gains,
        "identifiability": identifiability_json(bp),
    }
    return findings, identifiability_lines(bp), checked


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
        "Give --flip-wrench-sign for this sensor (child_to_parent "
        "sensors such as the real iCub's), or check its frame.",
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
    subjects, consistent, unconstrained, measured, units = [], [], [], [], []
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
        "a sensor's sign (--flip-wrench-sign for child_to_parent sensors such as the real "
        "iCub's), its frame or its kind (contact or internal) is wrong; the sensor named is the "
        "first to check.",
    )


# ---- what the data determine ---------------------------------------------------------------


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
        return ", ".join(names[:shown]) + (
            f", ... ({len(names)} in all)" if len(names) > shown else ""
        )

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
