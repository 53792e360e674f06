"""Each mode's ROS wiring (its topics and services around its session), one module per mode,
named by the mode's :attr:`~inertia_id_ros.modes.Mode.wiring`; :class:`base.ModeWiring` is what they
share."""
