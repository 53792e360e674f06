"""Files: recorded data (NPZ, CSV, ROS 2 bags), input descriptions of real logs, the package's
result JSON, exports (URDF, controller parameter files) and priors read from them."""
