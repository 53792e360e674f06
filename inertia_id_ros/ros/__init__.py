"""The ROS 2 layer: the identification node, the simulator node, the demo, message conversions.

The node's matrices are small (16 x 16 to 100 x 100): a multi-threaded BLAS only adds overhead and
competes with the input callbacks, so the ROS processes use one BLAS thread unless told otherwise
(set before numpy loads; override with OPENBLAS_NUM_THREADS / OMP_NUM_THREADS).
"""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
