"""The ROS 2 layer: the identification node, the simulator node, the demo, message conversions."""
