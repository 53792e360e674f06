"""Each mode's ROS wiring (its topics and services around its session), one module per mode,
named by the mode's :attr:`~inertia_id_ros.modes.Mode.node_io`; :class:`base.ModeIO` is what they
share."""
