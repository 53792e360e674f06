"""The ``links`` mode: a chain's links and joint drives, from joint states with efforts.

Session: :class:`~inertia_id_ros.online.link_session.LinkSession`; ROS wiring:
:class:`inertia_id_ros.ros.wiring.links.LinksWiring`; ``~/excite`` designs for the ``links`` target;
``inertia-id fit-links``; replays of joint states with efforts (a bag, or a described log), their
report a fit-links result (the payload-torques mode's ``torques_links_result``) with every update;
its results (fit-links', a replay's) predict held-out joint torques (:meth:`LinksMode.evaluate`);
its example: ``config/panda_links.yaml``, the simulated Panda's joint torques.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import ConfigError, InputError, JointNotFound, StartupError
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
    from pathlib import Path

    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.chain.actuators import ActuatorConfig
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.findings import Finding
    from inertia_id_ros.formats.data import JointStates
    from inertia_id_ros.modes.base import ExampleLog
    from inertia_id_ros.offline.replay import ReplayLog, ReplayReport, ReplayUpdates
    from inertia_id_ros.offline.validation import DataSource, Prediction
    from inertia_id_ros.online.link_estimator import LinkEstimate
    from inertia_id_ros.online.link_session import LinkSession
    from inertia_id_ros.online.session import Update


class LinksMode(Mode["LinkSession", "ReplayUpdates[LinkEstimate]"]):
    """See the module docstring."""

    name = "links"
    title = "Links mode"
    summary = "a chain's links and joint drives, from joint states with efforts"
    default_weighting = LINKS_DEFAULT_WEIGHTING
    wiring = "inertia_id_ros.ros.wiring.links:LinksWiring"
    commands = ("inertia_id_ros.cli.fit_links",)
    example = "config/panda_links.yaml"

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
            "(armature priors), effort scaling (torque constants) and a coupling between "
            "joints (a coupled wrist: its motors' rotor inertia and friction are estimated "
            "too, and published after the joints' drives, armature_source 'coupled_motor').",
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
        """The ``links`` target over the chain's joints, with its coupled motors."""
        chain = session.estimator.link_model
        return ExcitationTarget(
            chain.model, tuple(chain.joint_names), "links", coupling=chain.coupling
        )

    def replay(
        self, log: ReplayLog, session: LinkSession, settings: NodeSettings
    ) -> ReplayUpdates[LinkEstimate]:
        """The joint states (with efforts) of the joint-state topic; the findings: a joint's
        torques of the other sign, the links whose mass sits at its bound or far from its
        prior, or on the consistency boundary (:func:`links_replay_findings`)."""
        from inertia_id_ros.offline.replay import ReplayInputs, ReplayUpdates, replay_log

        chain = session.estimator.link_model
        inputs = ReplayInputs(settings.joint_states_topic)
        replay: ReplayUpdates[LinkEstimate] = ReplayUpdates(
            **replay_log(session, log, settings.update_rate_hz, inputs, chain.model),
            session=session,
        )
        replay.findings = links_replay_findings(session, replay.final)
        return replay

    def replay_report(
        self,
        replay: ReplayUpdates[LinkEstimate],
        checked: Mapping[str, Any],
        elapsed: float,
        truth: Any,
    ) -> ReplayReport:
        """A fit-links result (``mode``, ``method``, ``bodies``, ``joints``, ...) with the
        replay's counters and every update (:func:`links_update_record`); the links and drives
        as a table."""
        from inertia_id_ros.formats.link_result import link_result_json
        from inertia_id_ros.offline.replay import ReplayReport, json_ready

        final = replay.final
        assert final is not None, "a report needs an estimate"
        links = link_result_json(final.link_names, final.thetas, final.drives)
        document = {
            "mode": self.name,
            "method": final.method,
            **links,
            **checked,
            "residual_rms": final.residual_rms,
            "samples": final.n_samples,
            "rank": final.rank,
            "unidentifiable": list(final.unidentifiable),
            "determination": (
                None if final.determination is None else final.determination.as_json()
            ),
            "solve_time_s": final.solve_time,
            "source": replay.source,
            "update_rate_hz": replay.update_rate_hz,
            "window_sec": replay.session.estimator.config.window_sec,
            "start_time": replay.start_time,
            "received": replay.received,
            "dropped": replay.dropped,
            "failed_solves": dict(replay.session.failed_solves),
            "replay_time_s": elapsed,
            "updates": [
                {
                    key: json_ready(value)
                    for key, value in links_update_record(update, replay.start_time).items()
                }
                for update in replay.updates
            ],
        }
        return ReplayReport(document, tuple(links_replay_lines(replay, links, elapsed)))

    def write_replay_csv(self, replay: ReplayUpdates[LinkEstimate], path: str | Path) -> None:
        """One row per update: :data:`LINKS_CSV_COLUMNS`, then ``mass.<link>`` (kg)."""
        from inertia_id_ros.offline.replay import write_bodies_csv

        write_bodies_csv(
            path,
            LINKS_CSV_COLUMNS,
            replay.session.estimator.link_model.link_names,
            replay.updates,
            lambda update: links_update_record(update, replay.start_time, False),
        )

    def recognises(self, result: Mapping[str, Any]) -> bool:
        """A fit-links result: its ``joints``' drives."""
        return "joints" in result

    def evaluate(
        self,
        result: Mapping[str, Any],
        held_out: DataSource,
        urdf: str | None,
        train: DataSource | None,
    ) -> dict[str, Prediction]:
        """Joint torques (N m, N) of the result's chain (:func:`result_link_model`;
        :func:`~inertia_id_ros.chain.links.predict_torques`, with the gravity it estimated), of
        the URDF's links and of OLS refitted on ``train``."""
        from inertia_id_ros.chain.link_fit import fit_links
        from inertia_id_ros.chain.links import predict_torques, with_gravity
        from inertia_id_ros.offline.validation import Prediction, torque_data, urdf_model

        robot = urdf_model(urdf, "fit-links")
        states = held_out.joint_states()
        links, x = result_link_model(result, robot, states)
        data = torque_data(states)
        try:
            measured = links.measured_torques(links.in_joint_order(data).efforts)
        except ValueError as e:
            raise InputError(f"{held_out.path}: {e}") from None
        # only the fit predicts with its gravity (the base's tilt): the URDF and OLS are the
        # references as the URDF gives them
        gravity = result.get("gravity")
        fitted = links if gravity is None else with_gravity(links, gravity)
        models = {"fit": (fitted, x), "urdf": (links, links.prior)}
        if train is not None:
            ols = fit_links(
                links, torque_data(train.joint_states()), method="ols", prior_weight=0.0
            )
            models["ols"] = (links, ols.x)
        return {
            name: Prediction(links.joint_names, states.t, measured, predict_torques(m, xm, data))
            for name, (m, xm) in models.items()
        }

    def example_log(self, directory: Path, seed: int = 0) -> ExampleLog:
        """The simulated Panda's joint states with efforts, without a payload
        (:func:`panda_torques_log`)."""
        return panda_torques_log(directory / f"links_{seed}", seed, with_payload=False)


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
    joints = list(own.joints) or list(chain.joints if chain else ())  # one: check_settings
    unconfigured = ActuatorConfig(coulomb_velocity=own.coulomb_velocity)
    estimate = chain.estimate if chain else DRIVE_TERMS
    drives = {
        j: (chain.actuators.get(j, unconfigured) if chain else unconfigured).drive(estimate)
        for j in joints
    }
    robot = load_robot(settings, default_urdf=str(chain.urdf_path()) if chain else None)
    try:
        coupling = chain.motor_coupling() if chain else None
    except ConfigError as error:
        raise StartupError(f"parameter 'chain_config': {error}") from error
    try:
        model = LinkModel.from_model(
            robot,
            joints,
            chain.locked_positions if chain else None,
            drives,
            None if coupling is None else coupling.restricted(joints),
        )
    except (JointNotFound, ValueError) as error:  # unknown, or not a 1-DoF joint
        raise StartupError(f"parameter 'joints': {error}") from error
    return model, (
        {j: chain.actuators[j] for j in joints if j in chain.actuators} if chain else None
    )


def link_ellipsoids(settings: NodeSettings, model: LinkModel) -> list[Any]:
    """Per link of ``model``, the 4x4 ``Q`` of the ellipsoid around its URDF collision
    geometry where that holds its URDF inertial, else ``None``
    (:func:`~inertia_id_ros.offline.volumes.volumes_holding`; the URDF of ``urdf_path``,
    ``robot_description`` or ``chain_config``)."""
    import numpy as np

    from inertia_id_ros.chain.actuators import ChainConfig
    from inertia_id_ros.offline.volumes import ellipsoids_of, link_volumes, volumes_holding

    own: LinksSettings = settings.mode_settings
    chain_urdf = str(ChainConfig.load(own.chain_config).urdf_path()) if own.chain_config else None
    priors = np.asarray(model.prior)[: 10 * model.n_joints].reshape(-1, 10)
    with urdf_file(settings, chain_urdf) as urdf:
        volumes = link_volumes(urdf, model.link_names)
    held = volumes_holding(volumes, dict(zip(model.link_names, priors)))
    return ellipsoids_of(held, model.link_names)


def links_replay_findings(session: LinkSession, final: LinkEstimate | None) -> list[Finding]:
    """The plausibility findings of a links replay's ``final`` estimate: each joint's torques
    in the window against the URDF's (a flipped sign,
    :func:`~inertia_id_ros.offline.fit_checks.window_gain_findings`), the links whose mass sits
    at its bound (:func:`~inertia_id_ros.offline.plausibility.pinned_mass_findings`; not for
    ``ols``), is more than 3 x its prior's or whose pseudo-inertia is on the consistency
    boundary. The window keeps no unconstrained fit to compare residuals with."""
    import numpy as np

    from inertia_id_ros.chain.identify import PRIOR_MASS_FACTOR, mass_ratios
    from inertia_id_ros.offline.fit_checks import window_gain_findings
    from inertia_id_ros.offline.plausibility import (
        at_bound_findings,
        pinned_mass_findings,
        prior_mass_findings,
    )
    from inertia_id_ros.solvers.problem import on_consistency_bound

    if final is None:
        return []
    chain = session.estimator.link_model
    _, Y, f = session.estimator.window.samples(copy=False)
    findings = window_gain_findings(chain.joint_names, Y, f, chain.prior)
    prior = np.asarray(chain.prior)[: 10 * chain.n_joints].reshape(-1, 10)
    masses = final.thetas[:, 0]
    if final.method != "ols":
        findings += pinned_mass_findings(final.link_names, masses, prior[:, 0])
    far = mass_ratios(masses, prior[:, 0])
    findings += prior_mass_findings(final.link_names, far, masses, PRIOR_MASS_FACTOR)
    bound = [
        name
        for name, eig in zip(final.link_names, final.min_pseudo_inertia_eigs)
        if on_consistency_bound(float(eig))
    ]
    return findings + at_bound_findings(bound)


def links_replay_lines(
    replay: ReplayUpdates[LinkEstimate], links: Mapping[str, Any], elapsed: float
) -> list[str]:
    """The summary of a links replay: its updates, the final estimate's rank, each link (mass,
    COM, consistency) and each joint's drive (``links``: the result's ``bodies`` and
    ``joints``)."""
    from inertia_id_ros.core.inertia import check_consistency
    from inertia_id_ros.core.significance import IDENTIFIED
    from inertia_id_ros.offline.summary import dropped_text

    final = replay.final
    assert final is not None, "a report needs an estimate"
    dropped = dropped_text(replay.dropped)
    failed = dict(replay.session.failed_solves)
    consistent = all(check_consistency(theta).fully_consistent for theta in final.thetas)
    lines = [
        f"replay (links, {final.method}): {len(replay.updates)} updates at "
        f"{replay.update_rate_hz:g} Hz over {replay.span:.1f} s of {replay.source} in "
        f"{elapsed:.1f} s, {len(replay.estimates)} with an estimate, {sum(failed.values())} "
        "failed solves"
        + (f" {failed}" if failed else "")
        + (f"; dropped {dropped}" if dropped else ""),
        f"first estimate after {replay.estimates[0].time - replay.start_time:.1f} s; final: "
        f"{final.n_samples} joint states, base-parameter rank {final.rank}; "
        f"{len(final.unidentifiable)} parameters the data cannot fix (the prior decides; "
        "listed in the JSON)"
        + (
            ""
            if final.determination is None
            else f"; {len(final.determination.named(IDENTIFIED))} identified (|t| >= 3)"
        ),
        f"{'link':<20}{'mass (kg)':>10}{'COM (mm)':>26}{'λmin(J)':>12}  consistent",
    ]
    for body in links["bodies"]:
        com = "" if body["com"] is None else " ".join(f"{1e3 * c:8.1f}" for c in body["com"])
        lines.append(
            f"{body['name']:<20}{body['mass']:10.3f}{com:>26}"
            f"{body['min_pseudo_inertia_eig']:12.2e}  "
            f"{'yes' if body['fully_consistent'] else 'NO'}"
        )
    lines.append(f"{'joint':<20}{'viscous':>10}{'coulomb':>10}{'offset':>10}{'armature':>10}")
    lines += [
        f"{j['name']:<20}{j['viscous']:10.4f}{j['coulomb']:10.4f}{j['offset']:10.4f}"
        f"{j['armature']:10.4f}"
        for j in links["joints"]
    ]
    lines.append(
        f"joint torque rms {final.residual_rms:.4f} N m; all links fully consistent: "
        f"{'yes' if consistent else 'NO'}"
    )
    return lines


LINKS_CSV_COLUMNS = (
    "time",
    "elapsed",
    "status",
    "method",
    "n_samples",
    "residual_rms",
    "min_pseudo_inertia_eig",
    "rank",
    "unidentifiable",
    "solve_time",
    "message",
)
"""Columns of :func:`write_links_csv` (then ``mass.<link>`` per link, kg): bag time and time
since the first message (s), ``ok`` or why there is no estimate (numbers empty then), the joint
states in the window, residual RMS of the joint torques (N m), the smallest pseudo-inertia
eigenvalue over the links (kg m^2), the base-parameter rank, the parameters the data cannot fix
(space-separated), the solve time (s), the update's message."""


def links_update_record(
    update: Update, start_time: float, with_estimate: bool = True
) -> dict[str, Any]:
    """One links update as a record with :data:`LINKS_CSV_COLUMNS` keys (``None`` where there
    is no estimate) and, with ``with_estimate`` and an estimate, ``thetas`` {link: (10,)} and
    ``drives`` {joint: {term: value}} (JSON-ready)."""
    from inertia_id_ros.offline.replay import bodies_update_record

    return bodies_update_record(
        update,
        start_time,
        LINKS_CSV_COLUMNS,
        lambda estimate: {"unidentifiable": " ".join(estimate.unidentifiable)},
        _drives if with_estimate else None,
    )


def _drives(estimate: LinkEstimate) -> dict[str, Any]:
    """``drives`` {joint: {term: value}} of a links estimate (JSON-ready)."""
    return {
        "drives": {
            joint: {term: float(value) for term, value in vars(drive).items()}
            for joint, drive in estimate.drives.items()
        }
    }


def result_link_model(
    result: Mapping[str, Any], robot: pin.Model, states: JointStates
) -> tuple[LinkModel, np.ndarray]:
    """``(model, x)``: the chain of a links result (its joints, each with its Coulomb width, and
    its coupled motors; the other joints of ``robot`` locked at their mean positions in
    ``states``; the URDF's gravity) and its ``x``."""
    import numpy as np

    from inertia_id_ros.chain.friction import JointDrive
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.formats.link_result import motor_values, result_coupling

    joints = [entry["name"] for entry in result["joints"]]
    drives = {
        entry["name"]: JointDrive(coulomb_velocity=float(entry["coulomb_velocity"]))
        for entry in result["joints"]
    }
    coupling = result_coupling(result, "the result")
    try:
        links = LinkModel.from_model(robot, joints, states.mean_positions(), drives, coupling)
    except ValueError as e:
        raise InputError(str(e)) from None
    thetas = {body["name"]: body["theta"] for body in result["bodies"]}
    missing = [link for link in links.link_names if link not in thetas]
    if missing:
        raise InputError(f"the result has no bodies for links {missing} of joints {joints}")
    terms = {entry["name"]: entry for entry in result["joints"]}
    x = np.concatenate(
        [
            np.ravel([thetas[link] for link in links.link_names]),
            [
                terms[joint][term]
                for joint, drive in zip(links.joint_names, links.drives)
                for term in drive.terms
            ],
            motor_values(result, links, "the result"),
        ]
    )
    return links, x


def panda_torques_log(bag: Path, seed: int, with_payload: bool) -> ExampleLog:
    """A bag (and the URDF) of the simulated Panda without an F/T sensor, its joint states with
    efforts: seed 0's robot (its links off the URDF by up to 10 %, friction, torque offsets), with
    or without the 1.5 kg payload at ``panda_link8``, moving along ``seed``'s exciting motion, 4 s
    at 250 Hz (:func:`~inertia_id_ros.sim.recorders.record_joint_torques`)."""
    from pathlib import Path

    from inertia_id_ros.core.robots import example_robot_urdf, load_model
    from inertia_id_ros.modes.base import ExampleLog
    from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, ExcitingTrajectory
    from inertia_id_ros.sim.recorders import record_joint_torques
    from inertia_id_ros.sim.torques import panda_payload_torque_simulators

    urdf = example_robot_urdf("panda")
    motion = ExcitingTrajectory.for_model(load_model(urdf), PANDA_ARM_JOINTS, seed=seed)
    unloaded, loaded = panda_payload_torque_simulators(trajectory=motion)
    simulator = loaded if with_payload else unloaded
    record_joint_torques(bag, simulator, Path(urdf).read_text(), 4.0, 250.0, seed)
    return ExampleLog(str(bag), str(bag))
