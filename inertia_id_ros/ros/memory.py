"""Process-wide memory settings the node makes as it starts, so that its resident memory stays
flat over hours of 1 kHz input (README, "Performance over DDS").

Besides a leak in pinocchio's bindings (``pin.Quaternion`` of a C-ordered matrix, no longer
called: :attr:`~inertia_id_ros.core.covariance.Ellipsoid.quaternion_xyzw`), two allocators made
the node's memory creep:

- glibc, which raises its mmap threshold to the largest block freed, after which multi-megabyte
  numpy temporaries fragment the threads' heap arenas (:func:`fix_mmap_threshold`, for the modes
  whose :attr:`~inertia_id_ros.modes.Mode.fixed_mmap_threshold` asks for it: fixed, every such
  temporary is mapped and faulted in afresh, which doubled a whole body's update);
- Fast DDS, whose readers keep a pool of received samples that only grows: by a tenth (plus ten)
  each time more samples wait to be taken than ever before, up to the subscription's depth
  (:func:`use_dynamic_reader_memory`).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import MutableMapping
from pathlib import Path

MMAP_THRESHOLD_BYTES = 128 * 1024
"""glibc's mmap threshold, fixed at its initial value. By default glibc raises it to the largest
block freed (up to 32 MB): the worker's multi-megabyte numpy temporaries then come from the
threads' heap arenas and fragment them, and the node's resident memory crept up by about 4 MB in
a 10-minute soak. Fixed, such blocks are mapped and returned to the system when freed."""
_M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter number of the mmap threshold."""

FASTDDS_PROFILES = Path(__file__).with_name("fastdds_profiles.xml")
"""Fast DDS XML profiles for the node's process: rmw_fastrtps's defaults, except that readers
allocate each received sample and free it once taken (history memory policy ``DYNAMIC``)."""

FASTDDS_SETTINGS = (
    "FASTDDS_DEFAULT_PROFILES_FILE",
    "FASTRTPS_DEFAULT_PROFILES_FILE",
    "RMW_FASTRTPS_USE_QOS_FROM_XML",
    "RMW_FASTRTPS_PUBLICATION_MODE",
)
"""Environment variables by which a user configures Fast DDS; any of them set, the node keeps the
user's configuration."""
_FASTDDS_WORKING_DIRECTORY_FILES = ("DEFAULT_FASTDDS_PROFILES.xml", "DEFAULT_FASTRTPS_PROFILES.xml")
"""Profile files Fast DDS (3.x, 2.x) loads from the working directory when no file is named."""
_FASTDDS_RMWS = ("rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")
FAST_DDS_2_DISTROS = ("humble", "iron", "jazzy")
"""ROS 2 distributions on Fast DDS 2, which reads ``FASTRTPS_DEFAULT_PROFILES_FILE``; later ones
(and the Kilted wheels, which set no ``ROS_DISTRO``) read ``FASTDDS_DEFAULT_PROFILES_FILE`` and
warn about the former."""


def fix_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold (:data:`MMAP_THRESHOLD_BYTES`); False without glibc."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # not glibc; TypeError: Windows
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


def use_dynamic_reader_memory(
    environ: MutableMapping[str, str] = os.environ, working_directory: Path | None = None
) -> str:
    """Point Fast DDS at :data:`FASTDDS_PROFILES` (in ``environ``, before ``rclpy.init``): sets
    ``RMW_FASTRTPS_USE_QOS_FROM_XML=1`` and ``FASTDDS_DEFAULT_PROFILES_FILE`` (on
    :data:`FAST_DDS_2_DISTROS`, ``FASTRTPS_DEFAULT_PROFILES_FILE``).

    rmw_fastrtps gives every reader a pool of samples that grows by a tenth (plus ten) whenever
    more samples wait to be taken than ever before, and never shrinks: at 1 kHz each rare stall
    of the input thread (a garbage collection, the scheduler) left the node's memory a little
    higher, up to about 0.5 kB per sample of ``qos_depth`` per input. With the profiles, each
    sample is allocated on arrival and freed when taken. Everything else stays as rmw_fastrtps
    sets it: synchronous publishing, no data sharing, reallocating discovery and writer histories.

    Nothing changes when another middleware is selected (``RMW_IMPLEMENTATION``), or when the user
    configures Fast DDS (any of :data:`FASTDDS_SETTINGS`, or a default profile file in the
    working directory). Returns what was done, for the node's log.
    """
    rmw = environ.get("RMW_IMPLEMENTATION", "")
    if rmw and rmw not in _FASTDDS_RMWS:
        return f"middleware {rmw}: its own reader memory"
    configured = [name for name in FASTDDS_SETTINGS if environ.get(name)]
    directory = Path.cwd() if working_directory is None else working_directory
    configured += [
        name for name in _FASTDDS_WORKING_DIRECTORY_FILES if (directory / name).is_file()
    ]
    if configured:
        return (
            f"Fast DDS configured by the user ({', '.join(configured)}): reader pools as configured"
        )
    fast_dds_2 = environ.get("ROS_DISTRO", "") in FAST_DDS_2_DISTROS
    environ["FASTRTPS_DEFAULT_PROFILES_FILE" if fast_dds_2 else "FASTDDS_DEFAULT_PROFILES_FILE"] = (
        str(FASTDDS_PROFILES)
    )
    environ["RMW_FASTRTPS_USE_QOS_FROM_XML"] = "1"
    return f"Fast DDS readers allocate each sample ({FASTDDS_PROFILES.name})"
