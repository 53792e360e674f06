"""A chain's links and joint drives from joint torques: link model and regressor, friction and
armature, actuators, armature resolution, a payload from joint torques."""
