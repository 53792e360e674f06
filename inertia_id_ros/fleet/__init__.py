"""A fleet of robots: every run identified as a task on Dask distributed with the offline jobs
(:mod:`~inertia_id_ros.fleet.engine`, :mod:`~inertia_id_ros.fleet.tasks`), stored in a database
(:mod:`~inertia_id_ros.fleet.store`), each robot's parameter histories pooled and tested for drift
(:mod:`~inertia_id_ros.fleet.drift`), reported in an HTML page
(:mod:`~inertia_id_ros.fleet.report`); the robots and runs from a manifest
(:mod:`~inertia_id_ros.fleet.manifest`); a simulated fleet (:mod:`~inertia_id_ros.fleet.simulate`).
Above the jobs, below the command line; no ROS."""
