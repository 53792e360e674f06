"""Choices and defaults of the package's options, as plain values importable without numpy: the
``inertia-id`` parser (and so its ``--help``) reads them without loading the libraries. The
modules that use them import them from here."""

DEFAULT_JOINT_STATES_TOPIC = "/joint_states"
DEFAULT_WRENCH_TOPIC = "/ft_sensor/wrench"
DEFAULT_IMU_TOPIC = "/imu"

METHOD_NAMES = ("ols", "lmi", "manifold", "pointmass", "cad_prior")
"""The keys of :data:`inertia_id_ros.solvers.METHODS` (a test checks they agree)."""

INPUT_PATHS = ("raw", "typed")
"""How the node takes its inputs: serialized, decoded in batches into arrays (``raw``), or as
rclpy's message objects (``typed``)."""
WEIGHTINGS = ("none", "channel")
"""``none``: unweighted least squares; ``channel``: each channel weighted by its inverse residual
variance, iterated (:func:`~inertia_id_ros.core.weighting.iterate_channel_weights`)."""

PAYLOAD_DEFAULT_WEIGHTING = "channel"
"""Weighting of the payload estimator (``EstimatorConfig.weighting``, the node's payload mode):
each F/T component by its noise level, see
:attr:`~inertia_id_ros.online.payload_estimator.EstimatorConfig.weighting`."""

PAYLOAD_CHANGE_THRESHOLD = 50.0
"""CUSUM alarm level of the payload-change detector
(:class:`~inertia_id_ros.online.change_detection.ChangeDetectorConfig`; the node's
``payload_change_threshold``, ``replay --change-threshold``)."""

LINKS_DEFAULT_WEIGHTING = "none"
"""Weighting of :func:`~inertia_id_ros.chain.identify.identify_links` and ``fit-links``:
unweighted, because the joints' weights did not predict held-out torques better in any measured
case (KUKA runs 2 and 3 slightly worse, the simulated arm the same;
``benchmarks/differentiation.py``, ``benchmarks/kuka_lwr4.py``); ``"channel"`` (Gautier) is the
option when the joints' noise levels differ widely and the parameters, not the overall torque RMS,
matter."""

BASE_KINDS = ("floating", "fixed", "suspended")
"""``floating``: free base, motion from an IMU, base rows from the contact wrenches;
``suspended``: hanging through a contact F/T sensor (e.g. a crane), base rows as floating, base at
rest unless an IMU says otherwise; ``fixed``: held at a fixed frame (the root on a stand, or any
URDF frame such as a stance sole), no base rows (the holding wrench is not measured), the frame
still with a constant tilt."""

IMU_TILT_USES = ("correct", "check")
"""What an IMU does with a fixed base's tilt (offline and online alike): ``correct``: the mean of
its specific force (the motion the joints give it removed) over the samples (offline: all of
them; online: those so far) sets the fixed frame's tilt in place of ``fixed_tilt``; ``check``:
``fixed_tilt`` stays, the IMU's tilt is reported beside it."""
DEFAULT_IMU_TILT = "correct"

SENSOR_KINDS = ("contact", "internal")
"""F/T sensors of a whole-body model: ``contact``, the wrench the environment exerts on the robot
at the frame, about its origin; ``internal``, the wrench the root side exerts on the part beyond
the sensor."""

WHOLE_BODY_METHODS = ("lmi", "pointmass", "ols")
WHOLE_BODY_DEFAULT_WEIGHTING = "none"
"""``fit-whole-body --weighting`` and the node's whole_body mode default. On the simulated iCub
(``benchmarks/whole_body_weighting.py``) the held-out forces are the same either way (within
0.3 %) and the held-out torques better weighted (the arm sensors' by 20-30 %, their error against
the noise-free wrenches halved), but ``"channel"`` costs 1.7-4x the solve time (online warm
update 0.052 s vs 0.030 s median) and 1.8x the window memory: at whole-body scale the update
budget (100 ms) decides, so unweighted by default, ``"channel"`` on request."""
WHOLE_BODY_SENSOR_TIMEOUT_SEC = 0.5
"""An F/T sensor silent this long (s) behind the newest input has stopped (the whole-body
estimator's ``sensor_timeout_sec``, the node's parameter of the same name)."""
WHOLE_BODY_SAMPLE_RATE_HZ = 50.0
"""Highest rate (Hz) at which the whole-body estimator makes samples (its
``max_sample_rate_hz``, the node's ``sample_rate_hz``)."""
WHOLE_BODY_DEFAULT_PRIOR_WEIGHT = 1e-5
"""Weight of ``|x' − prior'|²`` (scaled coordinates: 1 = one link's size) relative to the mean
diagonal of the scaled gram matrix: negligible where the data determine ``x``, decisive where
they do not."""

DEFAULT_PRIOR_WEIGHT = 2e-3
"""Default ``prior_weight`` of the links ((N·m)² per SI unit² of x, per torque sample): the
blocked cross-validation optimum on the KUKA LWR4+ run 1 (``benchmarks/kuka_lwr4.py``).
Robot-dependent: prefer :func:`~inertia_id_ros.chain.link_fit.select_prior_weight` on your own
data."""

DEFAULT_HALF_WIDTH = 0.05
"""Half-width (s) of the differentiation of held-out joint states without recorded ``ddq``."""

PAYLOAD_TORQUES_HALF_WIDTH = 0.03
"""Half-width (s) of the joint states' differentiation for a payload from joint torques
(``fit-payload-torques``,
:func:`~inertia_id_ros.online.payload_session.payload_torque_session`): the payload's inertia is
seen through the accelerations, which a wider filter flattens (simulated Panda at 1 kHz,
differencing route: inertia error 6.8 % at 0.03 s, 11 % at 0.05 s, 28 % at 0.1 s)."""

PAYLOAD_TORQUES_MIN_SAMPLES = 5
"""At a low sample rate the payload's differentiation spans at least this many samples on each
side (:func:`~inertia_id_ros.chain.differentiation.payload_half_width`: 0.044 s at 125 Hz, where
:data:`PAYLOAD_TORQUES_HALF_WIDTH` would span 3). Simulated Panda, 30 s, 3 seeds, differencing
route, inertia error mean at 125 Hz: 42 % at 0.02 s, 25 % at 0.03 s, 14 % at 0.045 s (11
samples, as 0.044 s), 17 % at 0.06 s; at 250-1000 Hz 0.03 s stays the best of 0.02-0.12 s."""

LINK_FILTER_RATIO = 1.5
"""A link model (a fit-links result) fitted with a derivative filter wider than this times the
payload's (:data:`PAYLOAD_TORQUES_HALF_WIDTH`, or the one given), or narrower by as much, is
warned about (``link_filter``). Simulated Panda at 1 kHz, a 1.5 kg payload, the links fitted at each
half-width (3 seeds): the payload's inertia 6-12 % off at 0.03 s, 7-19 % at 0.05 s, 20-42 % at
0.08 s and 50-101 % at 0.13 s (fit-links' own choice there); its mass and COM within 0.2 % and
0.4 mm throughout."""

BAG_STORAGES = ("mcap", "sqlite3")
"""Storage plugins of the bags the package writes (``record-sim``, ``sim-whole-body --bag``), the
default first."""

DEFAULT_FILTER_CHAIN = "sensor_filter_chain"
EXPORT_MODES = ("replace", "add")

TARGETS = ("payload", "links")
"""What an exciting motion is designed for: the keys of
:data:`inertia_id_ros.motion.objectives.OBJECTIVES` (a test checks they agree)."""
DESIGN_TIME_LIMITS = {"payload": 40.0, "links": 240.0}
"""s: default optimisation time of a motion design, per target (each objective's
``default_time_limit``)."""
DEFAULT_MAX_ACCELERATION = 3.0
"""rad/s² (m/s²): default acceleration limit of every joint."""
DEFAULT_COLLISION_MARGIN = 0.01
"""m: smallest self-collision distance of a designed motion (with a collision checker)."""

TIME_UNITS = ("s", "ms", "us", "µs", "ns")
"""Units of a log's time column (an input description's ``time_unit``, ``--time-unit``)."""
ANGLE_UNITS = ("rad", "deg")
"""Units of logged joint angles (``--angle-unit``); a description also takes ``m`` and ``mm``."""
JOINT_SIGNALS = ("position", "velocity", "acceleration", "effort")
"""The per-joint signals of an input description."""
TARGET_SIGNALS = ("effort_target", "current_target")
"""Optional per-joint signals of an input description: the controller's own target torque
(N·m) and target motor current (A, raw: no torque constant), for ``calibrate-drives --check``."""
WRENCH_SIGNS = ("urdf", "keep", "flip")
"""An F/T sensor's sign in an input description: from the URDF's measure_direction, kept as
recorded, or negated."""
DEFAULT_PAYLOAD_RADIUS = 0.5
"""m: default bounding sphere of a payload about the sensor frame's origin (plausibility check,
``--bounding-ellipsoid``)."""
LINK_VOLUME_MARGIN = 0.05
"""m: a link's URDF collision box is grown by this on every side to bound its mass."""
NO_ELLIPSOID_METHODS = ("manifold",)
"""Methods that cannot take bounding ellipsoids (``--bounding-ellipsoid``, the node's
``bounding_ellipsoid``); ``ols`` solves unconstrained, without them."""

EXIT_INTERRUPTED = 130
"""Exit code of a command stopped by Ctrl-C (128 + SIGINT, as shells report it)."""

FT_CALIBRATION_KINDS = ("full", "gains")
"""F/T calibrations: ``full``, a 6×6 matrix; ``gains``, one gain per axis on the current
calibration's wrench (:mod:`inertia_id_ros.chain.ft_calibration`)."""
ONLINE_CALIBRATION_WINDOW_SEC = 30.0
"""The online F/T calibration fits the newest this many seconds of samples
(:mod:`inertia_id_ros.online.ft_calibrator`)."""
ONLINE_CALIBRATION_PERIOD_SEC = 5.0
"""The online F/T calibration is refitted every this many seconds of sample time."""
ONLINE_CALIBRATION_MIN_IMPROVEMENT = 0.1
"""A refit of the online F/T calibration is applied when it predicts the newest readings this
fraction better (mean over the six axes, none worse) than the calibration in use."""
