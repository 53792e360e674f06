"""The ``links`` mode: a chain's links and joint drives, from joint states with efforts.

Session: :class:`~inertia_id_ros.online.link_session.LinkSession`; ROS wiring:
:class:`inertia_id_ros.ros.wiring.links.LinksWiring`; ``~/excite`` designs for the ``links`` target;
``inertia-id fit-links``; replays of joint states with efforts (a bag, or a described log).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import ConfigError, JointNotFound, StartupError
from inertia_id_ros.modes.base import (
    ExcitationTarget,
    Mode,
    NodeSettings,
    ParameterSpec,
    load_robot,
    urdf_file,
)
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT, LINKS_DEFAULT_WEIGHTING

if TYPE_CHECKING:
    from inertia_id_ros.chain.actuators import ActuatorConfig
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.offline.replay import ReplayLog
    from inertia_id_ros.online.link_session import LinkSession


class LinksMode(Mode):
    """See the module docstring."""

    name = "links"
    title = "Links mode"
    summary = "a chain's links and joint drives, from joint states with efforts"
    default_weighting = LINKS_DEFAULT_WEIGHTING
    wiring = "inertia_id_ros.ros.wiring.links:LinksWiring"
    commands = ("inertia_id_ros.cli.fit_links",)

    parameters = (
        ParameterSpec(
            "joints",
            None,
            "Links mode: the chain's joints (each moves one link to identify; the "
            "robot's other joints are locked). Default: chain_config's joints; required "
            "without it.",
            array_type="string_array",
        ),
        ParameterSpec(
            "chain_config",
            "",
            "Links mode: path (absolute, or relative to the working directory) of a "
            "chain configuration YAML (inertia_id_ros.chain.actuators.ChainConfig, e.g. "
            "config/go1_front_left_leg.yaml): the URDF unless "
            "urdf_path/robot_description is given, the joints unless 'joints' is, "
            "locked positions, the drive terms to estimate, gear ratios, rotor inertias "
            "(armature priors) and effort scaling (torque constants).",
        ),
        ParameterSpec(
            "prior_weight",
            DEFAULT_PRIOR_WEIGHT,
            "Links mode: weight of the prior toward the URDF per torque sample ((N m)^2 "
            "per SI unit^2), >= 0; small (1e-6) for clean, exciting data, larger for "
            "noisy or short data.",
        ),
        ParameterSpec(
            "coulomb_velocity",
            0.0,
            "Links mode: width of the smooth Coulomb sign tanh(dq / v) (rad/s), >= 0, "
            "0 = exact sign, for joints that chain_config does not configure.",
        ),
    )

    def read_settings(self, values: Mapping[str, Any]) -> LinksSettings:
        """``prior_weight`` and ``coulomb_velocity`` >= 0."""
        for name in ("prior_weight", "coulomb_velocity"):
            if not float(values[name]) >= 0.0:
                raise StartupError(f"parameter '{name}' must be >= 0, got {values[name]!r}")
        return LinksSettings(
            joints=tuple(values["joints"] or ()),
            chain_config=values["chain_config"],
            prior_weight=float(values["prior_weight"]),
            coulomb_velocity=float(values["coulomb_velocity"]),
        )

    def check_settings(self, settings: NodeSettings) -> None:
        """The joints, from ``joints`` or ``chain_config``, are required (the window's memory
        is checked once the chain is known: :meth:`build_session`)."""
        own: LinksSettings = settings.mode_settings
        if not own.joints and not own.chain_config:
            raise StartupError(
                "parameter 'joints' is required in links mode (or give 'chain_config')"
            )

    def build_session(self, settings: NodeSettings) -> LinkSession:
        """The chain (:func:`link_model`), its window's memory checked, its links' bounding
        ellipsoids (``bounding_ellipsoid``: :func:`link_ellipsoids`)."""
        from inertia_id_ros.online.link_session import link_session

        model, actuators = link_model(settings)
        self.check_startup_window(settings, (model.n_joints, model.n_parameters))
        return link_session(
            model,
            actuators,
            window_sec=settings.window_sec,
            method=settings.method,
            solver_options=settings.solver_options,
            prior_weight=settings.mode_settings.prior_weight,
            max_input_rate_hz=settings.max_input_rate_hz,
            weighting=settings.weighting,
            bounding_ellipsoids=(
                link_ellipsoids(settings, model) if settings.bounding_ellipsoid else None
            ),
        )

    def excitation(self, session: LinkSession, settings: NodeSettings) -> ExcitationTarget:
        """The ``links`` target over the chain's joints."""
        chain = session.estimator.link_model
        return ExcitationTarget(chain.model, tuple(chain.joint_names), "links")

    def replay(self, log: ReplayLog, session: LinkSession, settings: NodeSettings) -> Any:
        """:func:`~inertia_id_ros.offline.replay.replay_links` on the joint-state topic."""
        from inertia_id_ros.offline.replay import replay_links

        return replay_links(log, session, settings.update_rate_hz, settings.joint_states_topic)


@dataclass(frozen=True)
class LinksSettings:
    """The links mode's parameters (see :attr:`LinksMode.parameters`), validated."""

    joints: tuple[str, ...]
    chain_config: str
    prior_weight: float
    coulomb_velocity: float


def link_model(settings: NodeSettings) -> tuple[LinkModel, dict[str, ActuatorConfig] | None]:
    """The chain of links mode from ``joints``, ``chain_config``, the URDF and
    ``coulomb_velocity``, and the chain config's actuators of its joints (``None`` without a
    chain config): the estimator fixes the armatures the data cannot identify by their motor
    type's rotor inertia. Raises StartupError naming the parameter."""
    from inertia_id_ros.chain.actuators import ActuatorConfig, ChainConfig
    from inertia_id_ros.chain.friction import DRIVE_TERMS
    from inertia_id_ros.chain.links import LinkModel

    own: LinksSettings = settings.mode_settings
    chain = None
    if own.chain_config:
        try:
            chain = ChainConfig.load(own.chain_config)
        except ConfigError as error:
            raise StartupError(f"parameter 'chain_config': {error}") from error
    joints = list(own.joints) or list(chain.joints)
    unconfigured = ActuatorConfig(coulomb_velocity=own.coulomb_velocity)
    estimate = chain.estimate if chain else DRIVE_TERMS
    drives = {
        j: (chain.actuators.get(j, unconfigured) if chain else unconfigured).drive(estimate)
        for j in joints
    }
    robot = load_robot(settings, default_urdf=str(chain.urdf_path()) if chain else None)
    try:
        model = LinkModel.from_model(
            robot, joints, chain.locked_positions if chain else None, drives
        )
    except (JointNotFound, ValueError) as error:  # unknown, or not a 1-DoF joint
        raise StartupError(f"parameter 'joints': {error}") from error
    return model, (
        {j: chain.actuators[j] for j in joints if j in chain.actuators} if chain else None
    )


def link_ellipsoids(settings: NodeSettings, model: LinkModel) -> list[Any]:
    """Per link of ``model``, the 4x4 ``Q`` of the ellipsoid around its URDF collision
    geometry where that holds its URDF inertial, else ``None``
    (:func:`~inertia_id_ros.offline.plausibility.volumes_holding`; the URDF of ``urdf_path``,
    ``robot_description`` or ``chain_config``)."""
    import numpy as np

    from inertia_id_ros.chain.actuators import ChainConfig
    from inertia_id_ros.offline import plausibility

    own: LinksSettings = settings.mode_settings
    chain_urdf = str(ChainConfig.load(own.chain_config).urdf_path()) if own.chain_config else None
    priors = np.asarray(model.prior)[: 10 * model.n_joints].reshape(-1, 10)
    with urdf_file(settings, chain_urdf) as urdf:
        volumes = plausibility.link_volumes(urdf, model.link_names)
    held = plausibility.volumes_holding(volumes, dict(zip(model.link_names, priors)))
    return plausibility.ellipsoids_of(held, model.link_names)
