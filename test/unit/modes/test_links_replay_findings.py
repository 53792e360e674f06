"""The links replay's checks of its final estimate (:func:`~inertia_id_ros.modes.links.
links_replay_findings`): a joint's torques of the other sign in the window, masses far from the
prior."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from inertia_id_ros.chain.links import LinkModel, regression_system
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.modes.links import links_replay_findings
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS
from inertia_id_ros.sim.torques import ExcitingTrajectory, JointTorqueSimulator


def test_the_links_replay_names_a_flipped_joint_torque_in_its_window():
    panda = LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS)
    trajectory = ExcitingTrajectory.for_model(panda.model, panda.joint_names, seed=3)
    data = JointTorqueSimulator(panda, trajectory, torque_noise_std=0.05).measure(
        np.arange(0.0, 4.0, 0.01), np.random.default_rng(0)
    )
    Y, y = regression_system(panda, data)
    Y, f = Y.reshape(data.n_samples, 7, -1), y.reshape(data.n_samples, 7).copy()
    f[:, 3] *= -1.0
    window = SimpleNamespace(samples=lambda copy: (None, Y, f))
    session = SimpleNamespace(estimator=SimpleNamespace(link_model=panda, window=window))
    thetas = panda.link_parameters(panda.prior).copy()
    thetas[2] *= 4.0  # link 3 four times its prior's mass
    final = SimpleNamespace(
        method="lmi", link_names=panda.link_names, thetas=thetas, min_pseudo_inertia_eigs=np.ones(7)
    )
    found = {(f.kind, f.subject) for f in links_replay_findings(session, final)}
    assert ("urdf_sign", "joint 'panda_joint4'") in found
    assert ("mass_far_from_prior", panda.link_names[2]) in found
