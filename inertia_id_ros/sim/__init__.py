"""Simulated robots (payload at a flange, joint torques of a chain) and reproductions of published
experiments."""
