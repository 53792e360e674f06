"""The online loop without ROS: inputs, the sliding window, the estimators, the sessions that
own the update rules (driven by the node, replay and tests), tare and change detection."""
