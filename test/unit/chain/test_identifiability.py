"""Identifiability judged against the noise: still joints (:mod:`inertia_id_ros.chain.stillness`),
parameters labelled by their standard errors (:mod:`inertia_id_ros.core.significance`), and a
base tilt told from the joints' zero offsets or not (:func:`~inertia_id_ros.chain.base_tilt.
tilt_separation`)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.planar import STILL, planar_log
from inertia_id_ros.chain.base_tilt import estimate_base_tilt, tilt_separation, tilted_gravity
from inertia_id_ros.chain.differentiation import filter_for, motion_samples
from inertia_id_ros.chain.identifiability import link_identifiability
from inertia_id_ros.chain.link_fit import fit_links
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, with_gravity
from inertia_id_ros.chain.stillness import joint_motions, planar_text
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.core.significance import (
    IDENTIFIED,
    IDENTIFIED_T,
    POORLY_DETERMINED,
    PRIOR_ONLY,
    determination,
)
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS
from inertia_id_ros.sim.torques import ExcitingTrajectory, JointTorqueSimulator


@pytest.fixture(scope="module")
def panda() -> LinkModel:
    return LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS)


def _planar_motion(panda: LinkModel) -> tuple[np.ndarray, np.ndarray, JointTorqueData]:
    """:func:`helpers.planar.planar_log`: ``(t, recorded positions, the data derived from
    them)``."""
    t, recorded, tau = planar_log(example_robot_urdf("panda"))
    keep, motion = motion_samples(t, recorded, None, None, filter_for(t, False, 0.05))
    return t, recorded, JointTorqueData(*motion, tau[keep], panda.joint_names)


def test_an_effectively_planar_motion_names_its_still_joints_and_identifies_only_by_t(panda):
    t, recorded, data = _planar_motion(panda)
    motions = joint_motions(t, recorded, panda.joint_names)
    still = STILL
    assert tuple(m.name for m in motions if m.still) == still
    assert planar_text(still[:1]) == "effectively planar: joint panda_joint1 still"
    assert planar_text(still).startswith("effectively planar: joints panda_joint1, panda_joint5")
    fit = fit_links(panda, data, method="ols", prior_weight=1e-6)
    judged = link_identifiability(panda, data, fit.x, motions)
    assert judged.still == still
    assert judged.rank_with_still is not None and judged.base.rank < judged.rank_with_still - 5
    labels = judged.determination
    identified = np.array([label == IDENTIFIED for label in labels.labels])
    assert identified.any() and np.all(labels.t[identified] >= IDENTIFIED_T)
    assert labels.named(POORLY_DETERMINED)  # determined by the rank, not by the noise
    assert "panda_joint7.viscous" not in labels.named(IDENTIFIED)  # a still joint's friction


def test_parameters_are_labelled_by_their_standard_errors():
    labels = determination(
        ["a", "b", "c", "d"], np.array([1.0, 0.1, 5.0, 0.0]), np.diag([0.01, 0.01, 1.0, 0.0]), ["c"]
    )
    assert labels.labels == (IDENTIFIED, POORLY_DETERMINED, PRIOR_ONLY, POORLY_DETERMINED)
    assert labels.as_json()["identified"] == ["a"] and np.isnan(labels.std[2])


def _tilted(model: LinkModel, roll: float, pitch: float) -> JointTorqueData:
    tilted = with_gravity(model, tilted_gravity(model, roll, pitch))
    trajectory = ExcitingTrajectory.for_model(model.model, model.joint_names, seed=3)
    return JointTorqueSimulator(tilted, trajectory, torque_noise_std=0.05).measure(
        np.arange(0.0, 6.0, 0.01), np.random.default_rng(0)
    )


def test_a_tilt_is_told_from_the_offsets_only_where_the_first_joint_turns(panda):
    data = _tilted(panda, 0.02, -0.01)
    separation = tilt_separation(panda, data, estimate_base_tilt(panda, data))
    assert separation.separable and separation.share > 0.5 and separation.t > 20
    # joint 1 locked: a pitch about joint 2's axis is a zero offset of joint 2
    arm = LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS[1:])
    data = _tilted(arm, 0.0, -0.03)
    tilt = estimate_base_tilt(arm, data)
    assert abs(tilt.pitch) > 0.02  # the search finds it, as it would find the offset
    separation = tilt_separation(arm, data, tilt)
    assert not separation.separable and separation.twin == "panda_joint2"
    assert separation.share < 0.01 and separation.as_json()["separable"] is False


def test_a_prior_weight_moving_a_mass_far_for_little_gain_is_set_aside(panda):
    from types import SimpleNamespace

    from inertia_id_ros.chain.identify import PRIOR_MASS_FACTOR, _prior_guard
    from inertia_id_ros.chain.link_fit import PriorWeightSelection

    weights = np.array([1e-8, 1e-6, 1e-4, 1e-2])
    selection = PriorWeightSelection(weights, np.array([1.0, 1.004, 1.009, 1.2]), 1e-8)
    x = panda.prior.copy()
    x[30:40] *= 5.0  # link 4's mass (and moments) five times the URDF's
    guard = _prior_guard(panda, SimpleNamespace(x=x, prior_weight=1e-8), selection)
    assert guard is not None and guard.kept == 1e-4 and guard.link == panda.link_names[3]
    assert guard.ratio == pytest.approx(5.0) and guard.gain == pytest.approx(1 - 1 / 1.009)
    assert "kept the larger prior weight 0.0001" in guard.line()
    assert guard.as_json()["mass_factor"] == PRIOR_MASS_FACTOR
    costly = PriorWeightSelection(weights, np.array([1.0, 1.02, 1.05, 1.2]), 1e-8)
    assert _prior_guard(panda, SimpleNamespace(x=x, prior_weight=1e-8), costly) is None
    near = SimpleNamespace(x=panda.prior, prior_weight=1e-8)  # masses at the prior's
    assert _prior_guard(panda, near, selection) is None


def test_links_far_from_their_prior_or_at_bound_are_named():
    from inertia_id_ros.offline.plausibility import at_bound_findings, prior_mass_findings
    from inertia_id_ros.solvers.problem import CONSISTENCY_MARGIN, on_consistency_bound

    (far,) = prior_mass_findings(["a", "b"], np.array([1.5, 4.0]), np.array([1.0, 36.0]), 3.0)
    assert far.kind == "mass_far_from_prior" and far.subject == "b" and "4.0 x" in far.message
    (bound,) = at_bound_findings(["link3", "link5"])
    assert bound.figures["links"] == ["link3", "link5"] and at_bound_findings([]) == []
    assert on_consistency_bound(CONSISTENCY_MARGIN) and not on_consistency_bound(1e-3)
    assert not on_consistency_bound(-0.5)  # inconsistent, not on the boundary


def test_a_tilt_kept_level_is_said_with_the_joint_it_resembles():
    from inertia_id_ros.chain.base_tilt import BaseTilt, TiltSeparation
    from inertia_id_ros.chain.identify import _tilt_line
    from inertia_id_ros.offline.fit_checks import links_tilt_findings

    found = dict(roll=0.0, pitch=-0.1, gravity=np.array([0.98, 0.0, -9.76]), rms=1.0)
    kept = BaseTilt(
        **found,
        level_rms=1.2,
        separation=TiltSeparation(0.2, 1e-3, 1e-4, 0.5, "joint2", False),
    )
    assert kept.kept_level and kept.as_json()["separation"]["twin_joint"] == "joint2"
    assert _tilt_line(kept).startswith("base tilt: kept level;") and "'joint2'" in _tilt_line(kept)
    (note,) = links_tilt_findings(kept)
    assert note.kind == "base_tilt_kept_level" and note.severity == "note" and note.fix
    told = BaseTilt(
        **found, level_rms=1.2, separation=TiltSeparation(1e-3, 1e-3, 1, 100, "j", True)
    )
    assert not told.kept_level and _tilt_line(told).startswith("base tilt: roll +0.00 deg")
    (warned,) = links_tilt_findings(told)  # 5.7 degrees, the search's limit
    assert warned.kind == "base_tilt" and "the search's limit" in warned.message
