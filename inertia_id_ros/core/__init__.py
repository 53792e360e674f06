"""Core math: conventions and consistency checks, robot models, kinematics, regressors,
filtering and covariance (no rclpy)."""
