"""The ROS 2 layer: the identification node, the simulator node, the demo, message conversions.

The console scripts limit BLAS/OpenMP threads first (:func:`inertia_id_ros.threads.limit_threads`:
one thread unless ``INERTIA_ID_THREADS`` or the libraries' own variables say otherwise).
"""
