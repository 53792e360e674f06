"""Body and payload regressors: the wrench of a rigid body, linear in its inertial parameters.

``body_regressor(v, a) @ theta == I a + v x* (I v)`` for a body with spatial inertia ``I``
(``theta`` about the frame origin, :mod:`inertia_id_ros.core.inertia` conventions), twist ``v`` and
spatial acceleration ``a`` (6,) ``[linear, angular]`` in the body frame. With ``a = a_g`` the proper
acceleration (gravity removed, see :mod:`inertia_id_ros.core.kinematics`) it is the wrench a sensor
exerts on the body. Same layout as ``pin.bodyRegressor`` (the tested reference); the numpy forms
here are vectorised over samples.

Written out, with ``a_c = a_lin + w x v_lin`` (the classical acceleration of the origin)::

    f_lin = m a_c + (alpha x + w x w x) (m c)
    f_ang = (m c) x a_c + I_o alpha + w x (I_o w)
"""

from __future__ import annotations

import numpy as np

from inertia_id_ros.core.inertia import N_BODY_PARAMS
from inertia_id_ros.core.spatial import cross, cross_matrices

WRENCH_CHANNEL_NAMES = ("fx", "fy", "fz", "tx", "ty", "tz")
"""Names of a wrench's channels, in the order of its 6-vector (N, N m); an F/T offset has one
parameter per channel."""
N_WRENCH_CHANNELS = len(WRENCH_CHANNEL_NAMES)
"""Channels of a wrench (6)."""


def _inertia_map(x: np.ndarray) -> np.ndarray:
    """(N, 3, 6) ``L(x)`` with ``I x == L(x) [Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` for ``x`` (N, 3)."""
    out = np.zeros(x.shape[:-1] + (3, 6))
    x0, x1, x2 = x[..., 0], x[..., 1], x[..., 2]
    out[..., 0, 0], out[..., 0, 1], out[..., 0, 3] = x0, x1, x2
    out[..., 1, 1], out[..., 1, 2], out[..., 1, 4] = x0, x1, x2
    out[..., 2, 3], out[..., 2, 4], out[..., 2, 5] = x0, x1, x2
    return out


def _check_batch(v: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(v, dtype=float)
    a = np.asarray(a, dtype=float)
    if v.ndim != 2 or v.shape[1] != 6 or a.shape != v.shape:
        raise ValueError(f"v and a must both have shape (N, 6), got {v.shape} and {a.shape}")
    return v, a


def body_regressor_batch(v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(N, 6, 10) regressors from twists ``v`` and spatial accelerations ``a`` (N, 6):
    ``out[i] @ theta == I a[i] + v[i] x* (I v[i])``."""
    v, a = _check_batch(v, a)
    lin, w = v[:, :3], v[:, 3:]
    alpha = a[:, 3:]
    a_c = a[:, :3] + cross(w, lin)
    w_cross = cross_matrices(w)
    out = np.zeros((v.shape[0], 6, N_BODY_PARAMS))
    out[:, :3, 0] = a_c
    out[:, :3, 1:4] = cross_matrices(alpha) + w_cross @ w_cross
    out[:, 3:, 1:4] = -cross_matrices(a_c)
    out[:, 3:, 4:] = _inertia_map(alpha) + w_cross @ _inertia_map(w)
    return out


def body_regressor(v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(6, 10) regressor of one sample: ``body_regressor(v, a) @ theta == I a + v x* (I v)``;
    ``v`` (m/s, rad/s), ``a`` (m/s^2, rad/s^2) (6,) in the body frame."""
    return body_regressor_batch(np.reshape(v, (1, 6)), np.reshape(a, (1, 6)))[0]


def payload_regressor_batch(
    v: np.ndarray, a_g: np.ndarray, estimate_offset: bool = True
) -> np.ndarray:
    """(N, 6, 16) ``[body_regressor | I_6]`` (or (N, 6, 10) without the offset): the measured
    wrench ``f = body_regressor(v, a_g) @ theta + offset`` with ``x = [theta, offset]``."""
    body = body_regressor_batch(v, a_g)
    if not estimate_offset:
        return body
    out = np.zeros((body.shape[0], 6, N_BODY_PARAMS + N_WRENCH_CHANNELS))
    out[:, :, :N_BODY_PARAMS] = body
    out[:, :, N_BODY_PARAMS:] = np.eye(N_WRENCH_CHANNELS)
    return out


def payload_regressor(v: np.ndarray, a_g: np.ndarray, estimate_offset: bool = True) -> np.ndarray:
    """(6, 16) ``[body_regressor(v, a_g) | I_6]`` (or (6, 10) without the F/T offset) of one
    sample: ``payload_regressor(v, a_g) @ [theta, offset] == I a_g + v x* (I v) + offset``."""
    return payload_regressor_batch(np.reshape(v, (1, 6)), np.reshape(a_g, (1, 6)), estimate_offset)[
        0
    ]
