"""Exciting motions: the trajectory type (no ROS) and its design."""
