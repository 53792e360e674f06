"""Robot models: example-robot-data URDFs, loading a pinocchio model, reducing it to some joints.

Models are fixed-base (no root joint is added): the F/T-sensor pipeline needs the chain from the
world to the sensor, expressed with the robot's actuated joints only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from inertia_id_ros.errors import FrameNotFound, JointNotFound

ROBOT_URDFS: dict[str, str] = {
    "panda": "panda_description/urdf/panda.urdf",
    "icub": "icub_description/robots/icub.urdf",
    "icub_reduced": "icub_description/robots/icub_reduced.urdf",
    "ur3": "ur_description/urdf/ur3_robot.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "ur10": "ur_description/urdf/ur10_robot.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "go1": "go1_description/urdf/go1.urdf",
}
"""Known example-robot-data robots: name -> URDF path relative to :func:`example_robot_data_dir`.

``icub`` is the full iCub with its six F/T sensors as fixed joints (e.g. ``r_arm_ft_sensor``
between ``r_shoulder_3`` and ``r_upper_arm``); ``solo12`` and ``go1`` are quadrupeds (use a leg's
joints, the trunk is the fixed base)."""

STANDARD_GRAVITY = 9.81
"""|g| (m/s²) of a URDF's world (z up; pinocchio's default gravity ``[0, 0, -9.81]``)."""

_ENV_VAR = "EXAMPLE_ROBOT_DATA_DIR"


def _candidate_dirs() -> list[Path]:
    candidates = []
    if os.environ.get(_ENV_VAR):
        candidates.append(Path(os.environ[_ENV_VAR]))
    for entry in sys.path:  # pip (cmeel) installs: <site-packages>/cmeel.prefix/share/...
        path = Path(entry or ".")
        candidates.append(path / "cmeel.prefix" / "share" / "example-robot-data" / "robots")
        if path.parent.parent.parent.name == "cmeel.prefix":
            candidates.append(path.parent.parent.parent / "share" / "example-robot-data" / "robots")
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) + ["/opt/openrobots"]:
        if prefix:
            candidates.append(Path(prefix) / "share" / "example-robot-data" / "robots")
    return candidates


def example_robot_data_dir() -> Path:
    """Directory holding example-robot-data's ``*_description`` folders.

    Searched in order: ``$EXAMPLE_ROBOT_DATA_DIR``, the pip (cmeel) install next to the Python
    packages, ``$AMENT_PREFIX_PATH`` entries, ``/opt/openrobots``. Raises ``FileNotFoundError``
    listing the places searched.
    """
    candidates = _candidate_dirs()
    for path in candidates:
        if (path / "panda_description").is_dir():
            return path
    raise FileNotFoundError(
        "example-robot-data not found (pip install example-robot-data, or set "
        f"${_ENV_VAR}); searched: {', '.join(map(str, candidates))}"
    )


def example_robot_urdf(name: str) -> Path:
    """Path of the URDF of example-robot-data robot ``name`` (a key of :data:`ROBOT_URDFS`)."""
    if name not in ROBOT_URDFS:
        raise KeyError(f"unknown example robot {name!r}; known: {', '.join(sorted(ROBOT_URDFS))}")
    path = example_robot_data_dir() / ROBOT_URDFS[name]
    if not path.is_file():
        raise FileNotFoundError(f"URDF of {name!r} not found at {path}")
    return path


def load_model(
    urdf_path: str | os.PathLike | None = None, urdf_xml: str | None = None
) -> pin.Model:
    """Fixed-base pinocchio model from a URDF file or an XML string (exactly one of them).

    Fixed joints are merged into their parent body (pinocchio's URDF parser); their frames are kept
    as ``FIXED_JOINT`` frames carrying the child link's inertia.
    """
    if urdf_path is not None and urdf_xml is None:
        path = Path(urdf_path)
        if not path.is_file():
            raise FileNotFoundError(f"URDF file {str(path)!r} does not exist or is not a file")
        try:
            xml = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise OSError(f"cannot read URDF file {str(path)!r}: {e}") from e
        source = f"URDF file {str(path)!r}"
    elif urdf_xml is not None and urdf_path is None:
        xml = urdf_xml
        source = "URDF string"
    else:
        raise ValueError("give exactly one of urdf_path and urdf_xml")
    if not xml.strip():
        raise ValueError(f"{source} is empty")
    try:
        return pin.buildModelFromXML(xml)
    except (RuntimeError, ValueError) as e:
        raise ValueError(f"cannot build a model from {source}: {e}") from e


def frame_id(model: pin.Model, name: str) -> int:
    """Index of frame ``name`` in ``model``; raises :class:`FrameNotFound` listing the frames."""
    if not model.existFrame(name):
        raise FrameNotFound(name, [frame.name for frame in model.frames])
    return model.getFrameId(name)


def joint_id(model: pin.Model, name: str) -> int:
    """Index of joint ``name`` in ``model``; raises :class:`JointNotFound` listing the joints."""
    if not model.existJointName(name):
        raise JointNotFound([name], list(model.names)[1:])
    return model.getJointId(name)


def selected_names(
    names: Sequence[str], chosen: Iterable[str] | None
) -> tuple[tuple[str, ...], list[str]]:
    """``(selected, unknown)``: the ``names`` that are ``chosen`` (all of them when ``chosen`` is
    ``None``), in the order of ``names``, and the ``chosen`` names that are not among them."""
    if chosen is None:
        return tuple(names), []
    chosen = list(chosen)
    return tuple(n for n in names if n in chosen), [n for n in chosen if n not in names]


def reduce_model(
    model: pin.Model,
    joint_names: Iterable[str],
    locked_positions: Mapping[str, float] | None = None,
) -> pin.Model:
    """Copy of ``model`` keeping only ``joint_names``; the other joints are locked.

    Locked joints are held at ``locked_positions[name]`` (rad or m; 1-dof joints only), else at
    their neutral position (``pin.buildReducedModel``: their bodies are merged into the parent and
    their frames become ``FIXED_JOINT`` frames).
    """
    keep = list(joint_names)
    unknown = [name for name in keep if not model.existJointName(name)]
    if unknown:
        raise JointNotFound(unknown, list(model.names)[1:])
    locked_positions = dict(locked_positions or {})
    q = configuration(model, locked_positions)
    locked = [j for j in range(1, model.njoints) if model.names[j] not in keep]
    extra = set(locked_positions) - {model.names[j] for j in locked}
    if extra:
        raise ValueError(f"locked_positions names joints that are kept or unknown: {sorted(extra)}")
    return pin.buildReducedModel(model, locked, q)


def configuration(model: pin.Model, positions: Mapping[str, float]) -> np.ndarray:
    """Configuration (model.nq,) at neutral except ``positions`` (name -> rad or m, 1-dof joints;
    continuous joints are given as their angle)."""
    q = pin.neutral(model)
    for name, value in positions.items():
        joint = model.joints[joint_id(model, name)]
        if joint.nv != 1:
            raise ValueError(
                f"joint {name!r} has {joint.nv} degrees of freedom; only 1-dof joints "
                "can be set by a scalar position"
            )
        if joint.nq == 1:
            q[joint.idx_q] = value
        else:  # continuous joint: (cos, sin)
            q[joint.idx_q : joint.idx_q + 2] = np.cos(value), np.sin(value)
    return q


def link_frame(model: pin.Model, name: str) -> int:
    """The BODY frame of the link frame ``name`` stands for: itself for a link, a joint's (or
    fixed joint's) child link, an operational frame itself (it carries no link). Raises
    :class:`FrameNotFound`."""
    fid = frame_id(model, name)
    frame = model.frames[fid]
    if frame.type == pin.FrameType.BODY:
        return fid
    children = [
        k
        for k, f in enumerate(model.frames)
        if f.parentFrame == fid and f.type == pin.FrameType.BODY and k != fid
    ]
    if frame.type in (pin.FrameType.FIXED_JOINT, pin.FrameType.JOINT) and children:
        return children[0]
    return fid


def frames_beyond(model: pin.Model, start: int) -> set[int]:
    """Frames whose chain of parent frames reaches frame ``start`` (itself included): the
    subtree beyond it."""
    frames = model.frames
    beyond = {start}
    size = 0
    while size != len(beyond):
        size = len(beyond)
        beyond.update(k for k, f in enumerate(frames) if f.parentFrame in beyond and k != 0)
    return beyond


@dataclass
class UrdfLink:
    """A URDF link with mass in a pinocchio model (:func:`urdf_links`)."""

    name: str
    frame: int
    """Its BODY frame."""
    joint: int
    """The joint it moves with."""
    placement: pin.SE3
    """Joint frame -> link frame."""
    theta: np.ndarray
    """(10,) its own inertia (without the links merged into it) about and in the link frame."""


def urdf_links(model: pin.Model) -> list[UrdfLink]:
    """URDF links with mass: their BODY frame, parent joint, placement and own θ (link frame)."""
    frames = model.frames
    fixed_by_joint: dict[int, list[int]] = {}
    for k, f in enumerate(frames):
        if f.type == pin.FrameType.FIXED_JOINT:
            fixed_by_joint.setdefault(f.parentJoint, []).append(k)
    links = []
    for k, f in enumerate(frames):
        if f.type != pin.FrameType.BODY:
            continue
        parent = frames[f.parentFrame]
        if parent.type == pin.FrameType.FIXED_JOINT:
            inertia = parent.inertia  # the merged child link's own inertia, in the joint's frame
            in_link = f.placement.inverse() * parent.placement
        else:  # the joint's own link: the joint inertia minus the merged fixed children
            theta = np.array(model.inertias[f.parentJoint].toDynamicParameters())
            for c in fixed_by_joint.get(f.parentJoint, []):
                theta -= frames[c].placement.act(frames[c].inertia).toDynamicParameters()
            inertia = pin.Inertia.FromDynamicParameters(theta)
            in_link = f.placement.inverse()
        theta = np.array(in_link.act(inertia).toDynamicParameters())
        if theta[0] > 1e-12:
            links.append(UrdfLink(f.name, k, f.parentJoint, f.placement.copy(), theta))
    return links
