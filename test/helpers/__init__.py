"""Helpers shared by the tests, one module per concern (e.g. ``from helpers.dds import
Feeder``; ``test/`` is on the test path). Fixtures live in ``conftest.py``."""
