"""Files: recorded data (NPZ, CSV, ROS 2 bags), replay of bags, reports, export of results."""
