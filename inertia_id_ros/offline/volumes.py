"""Bounding volumes of bodies: a payload's sphere or box about its sensor (:func:`payload_volume`),
links' volumes from the URDF's collision geometry (:func:`link_volumes`; only those that hold the
URDF's own inertial, :func:`volumes_holding`), and the check of a fitted body against one: its
COM, or its mass on average, outside the volume's ellipsoid (:func:`volume_findings`,
``"bounding_volume"``, warn; what ``--bounding-ellipsoid`` forbids). Lengths in m, masses in kg,
each volume in its body's frame."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from inertia_id_ros.findings import WARN, Finding
from inertia_id_ros.options import (
    DEFAULT_PAYLOAD_RADIUS,
    LINK_VOLUME_MARGIN,
)

if TYPE_CHECKING:
    pass


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
        if self.radius is not None or self.half_extents is None:
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
    for name, boxes in corners.items():
        points = np.vstack(boxes)
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


def link_bounds(urdf: str | Path, model: Any) -> dict[str, Volume]:
    """The bounding volumes of a LinkModel's links (:func:`link_volumes` of the URDF file
    ``urdf``) that hold the model's own inertials (:func:`volumes_holding`)."""
    prior = np.asarray(model.prior)[: 10 * len(model.link_names)].reshape(-1, 10)
    return volumes_holding(link_volumes(urdf, model.link_names), dict(zip(model.link_names, prior)))
