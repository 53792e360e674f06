"""``inertia-id``: the command line.

Subcommands, one module each (``inertia_id_ros.cli.fit_payload``, ...) with its
``add_parser(subparsers)`` and ``run(args) -> int``; what they share is in
:mod:`inertia_id_ros.cli.common`. The modules import numpy, pinocchio, ... only when a
command runs, so that ``--help`` and argument errors are quick:

- ``fit-payload``: the payload beyond an F/T sensor from recorded joint states and wrenches, with
  the node's estimator (:class:`~inertia_id_ros.online.payload_estimator.PayloadEstimator`);
- ``fit-payload-torques``: the payload at a frame of an arm without an F/T sensor from recorded
  joint states and efforts, with a link model (a fit-links result or the URDF's) or from a loaded
  and an unloaded run of the same motion
  (:func:`~inertia_id_ros.chain.payload_from_torques.fit_payload`);
- ``fit-links``: the links of a chain (and joint friction, offset, armature) from recorded joint
  states and efforts (:func:`~inertia_id_ros.chain.identify.identify_links`: derivative filter,
  joint weighting and prior weight chosen on the data, reported);
- ``calibrate-drives``: each joint's current-to-torque gain from an unloaded and a loaded run
  with a weighed payload (:func:`~inertia_id_ros.chain.drive_gains.fit_drive_gains`);
- ``fit-whole-body``: every link of a floating-base robot from an IMU and several F/T sensors
  (:func:`~inertia_id_ros.chain.whole_body_fit.fit_whole_body`; data:
  :mod:`inertia_id_ros.formats.whole_body_log`);
- ``traversaro``: Traversaro et al. 2016's Table I reproduced in simulation
  (:mod:`inertia_id_ros.sim.traversaro2016`);
- ``demo``: the live demo (simulator, node and client over DDS); see :mod:`inertia_id_ros.ros.demo`;
- ``replay``: a ROS 2 bag through the node's estimator, update by update in bag time, to CSV, JSON
  and a PNG report (:mod:`inertia_id_ros.offline.replay`, :mod:`inertia_id_ros.offline.report`);
  with ``--params-file`` the session the node builds from its parameter file (payload or whole_body
  mode: a whole-body replay's JSON has fit-whole-body's fields for the final estimate and one
  record per update);
- ``record-sim``: a bag of the simulated Panda (joint states, wrenches, URDF) to replay, written
  directly (no DDS);
- ``sim-whole-body``: an NPZ of a simulated floating-base robot (iCub, Go1; iCub suspended or on
  a stand) with its truth (:mod:`inertia_id_ros.sim.whole_body_simulator`), or a ROS 2 bag of it to
  replay (``--bag``);
- ``sim-log``: the simulated Panda's recording written as other loggers write it (other names,
  units, clocks; motor currents) (:mod:`inertia_id_ros.sim.real_logs`);
- ``calibrate-ft``: F/T sensors' offsets and calibration matrices in situ, from the model of
  what each carries (:mod:`inertia_id_ros.jobs.calibrate_ft`), written as a file the fits apply
  (``--ft-calibration``);
- ``export``: a result's body into a new URDF (a link's ``<inertial>``) and a gravity-compensation
  filter parameter file, UR/franka/KUKA payload settings (:mod:`inertia_id_ros.formats.export`);
- ``excite``: design an exciting motion (payload or links) into a trajectory NPZ
  (:mod:`inertia_id_ros.motion.design`), or check one, against the limits, a workspace and
  obstacles;
- ``validate``: a result's prediction errors on held-out data vs the URDF and plain OLS
  (:mod:`inertia_id_ros.offline.validation`);
- ``fleet run``, ``fleet drift``, ``fleet report``, ``fleet simulate``: a fleet of robots, each
  run identified as a task on Dask into a database, drift detected and reported
  (:mod:`inertia_id_ros.fleet`);
- ``keystore create``: a DDS-Security keystore so that only operators may call ``~/excite``
  (:mod:`inertia_id_ros.ros.keystore`);
- ``call``: the running node's ``~/identify`` or ``~/tare`` service, without the ``ros2`` command
  line (:mod:`inertia_id_ros.ros.client`).

Recorded data: NPZ or CSV files (``--data``) or ROS 2 bags (``--bag``), see
:mod:`inertia_id_ros.formats.data`.
``--json OUT`` writes the result::

    {"method": str,
     "bodies": [{"name", "frame", "mass", "com": [3], "inertia_com": [ixx, ixy, ixz, iyy, iyz, izz],
                 "theta": [10], "fully_consistent": bool, "min_pseudo_inertia_eig": float}],
     "sensor_offset": [6],        # fit-payload only: [fx, fy, fz, tx, ty, tz] (N, N m)
     "joints": [{"name", "viscous", "coulomb", "coulomb_velocity", "offset", "armature"}],
                                  # fit-links only
     "transmission": {"joints", "matrix"}, "motors": [{"name", "joint", "rotor_inertia",
                "viscous", "coulomb", "coulomb_velocity"}],
                                  # fit-links, a motor coupled to several joints only
     "theta_std": [10], "covariance": [10][10], "offset_changes": {joint: N m},
     "link_model": str, "rank": int, "n_parameters": int, "warnings": [str],
     "alignment": {"shift_s", "position_rms"} or null,
                                  # fit-payload-torques only
     "residual_rms": float, "samples": int, "solve_time_s": float,
     "updates": [{...}]}           # replay only: one record per update, keys replay.CSV_COLUMNS

SI units; ``theta`` about and in ``frame`` (:mod:`inertia_id_ros.core.inertia` order), ``com`` in
that frame, ``inertia_com`` about the COM with that frame's axes (both ``null`` when the mass is not
positive). fit-payload: one body, ``"payload"`` in the sensor frame; ``residual_rms`` of the wrench
fit (N and N m rows mixed); recorded ``ddq`` is not used (the estimator differentiates, as live).
replay: as fit-payload, for the final estimate. record-sim ``--truth-json``: the simulated payload
(``"method": "truth"``).
fit-links: one body per identified joint, named and framed by the URDF link it moves (the link's
frame is the joint's); predicted torque = RNEA(theta) + viscous dq + coulomb s(dq) + offset +
armature ddq with s = tanh(dq / coulomb_velocity) (sign(dq) if coulomb_velocity is 0), plus
G[m]ᵀ (rotor_inertia ddq_m + viscous dq_m + coulomb s(dq_m)) of each motor ``m`` an input
description's transmission couples to several joints (``dq_m = G[m] dq``, motor side, G the
transmission's ``matrix``: :mod:`inertia_id_ros.chain.motors`);
``residual_rms`` the joint torque RMS (N m); missing ``dq``/``ddq`` are differentiated (the filter
chosen by cross-validation unless ``--filter-half-width``). fit-links also writes
``"differentiation"`` (the filter: ``source``, ``half_width_s``, ``order``, ``window_samples``,
``selection`` with every candidate's score), ``"prior_weight"`` and ``"prior_weight_selection"``,
``"weighting"`` (``kind``, per-joint ``weights`` and ``sigma``); ``validate`` differentiates
held-out data with the result's filter. fit-payload-torques writes the filter it applied as
``"differentiation"`` (as fit-links: ``--filter-half-width`` if given, else the
``--links-result``'s, else 0.03 s; ``"source": "recorded"`` when ``dq`` and ``ddq`` are recorded),
the efforts' delay as ``"torque_delay"`` (``delay_s``, the ``--links-result``'s),
``"link_model"``, and ``"findings"`` and ``"refused"`` (the payload's bounding volume, a fit-links
result's filter) as below.

fit-payload, fit-links and fit-whole-body also write ``"findings"`` (the plausibility checks of
:mod:`inertia_id_ros.offline.plausibility`: ``kind``, ``subject``, ``severity``, ``message``,
``figures``), ``"refused"``, ``"residual_ratios"``, ``"identifiability"`` and (fit-links,
fit-whole-body) ``"urdf_gains"``; a refusal before the fit writes only ``findings`` and
``refused``.

Exit codes: 0 done; 1 no estimate (solver failure, or the estimator's result was not physically
consistent); 2 bad input (arguments, URDF, data, or data that cannot determine the estimate), with
one line on stderr; 3 refused by a plausibility check (each refusal on stderr, naming the likely
cause and the fix), or, with ``excite``, the motion breaks a limit (stderr names it and the
amount).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from inertia_id_ros import modes
from inertia_id_ros.cli import (
    calibrate_drives,
    calibrate_ft,
    call,
    demo,
    excite,
    export,
    fleet,
    keystore,
    record_sim,
    replay,
    sim_log,
    sim_whole_body,
    traversaro,
    validate,
)
from inertia_id_ros.cli.common import EXIT_BAD_INPUT, EXIT_NO_ESTIMATE, print_findings
from inertia_id_ros.errors import CallerError, EstimateUnavailable
from inertia_id_ros.options import EXIT_INTERRUPTED
from inertia_id_ros.threads import limit_threads

COMMANDS = (
    *(importlib.import_module(name) for mode in modes.modes() for name in mode.commands),
    calibrate_drives,
    traversaro,
    demo,
    replay,
    record_sim,
    sim_whole_body,
    sim_log,
    calibrate_ft,
    export,
    excite,
    validate,
    fleet,
    keystore,
    call,
)
"""The command modules, in ``--help`` order: each mode's
(:attr:`~inertia_id_ros.modes.Mode.commands`, in the registry's order), then the others."""


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (exit code 2), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``inertia-id``."""
    parser = _Parser(prog="inertia-id", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (2 on bad input, 1 when a job gives no estimate, with
    one line on stderr)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2), already printed
        return int(e.code or 0)
    try:
        limit_threads()  # before the command loads numpy (inertia_id_ros.threads)
        return args.run(args)
    except CallerError as e:
        print_findings(args.command, e.findings)  # what a job had found before
        print(f"inertia-id {args.command}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except EstimateUnavailable as e:  # a job's solver failed
        print_findings(args.command, e.findings)
        print(f"inertia-id {args.command}: no estimate: {e.message}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    except KeyboardInterrupt:  # Ctrl-C: wherever it lands, one line (the demo says it itself)
        print(f"inertia-id {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
