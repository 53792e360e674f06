"""``python -m inertia_id_ros.cli``: the same as ``inertia-id``."""

import sys

from inertia_id_ros.cli import main

if __name__ == "__main__":
    sys.exit(main())
