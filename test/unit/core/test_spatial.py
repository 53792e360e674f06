"""The spatial algebra's hot-path helpers against numpy and pinocchio."""

import numpy as np
import pinocchio as pin
import pytest

from inertia_id_ros.core.spatial import cross, motion_cross


@pytest.mark.parametrize(
    ("a_shape", "b_shape"), [((50, 3), (50, 3)), ((3,), (7, 3)), ((4, 1, 3), (5, 3))]
)
def test_cross_equals_numpy_bit_for_bit_with_broadcasting(a_shape, b_shape):
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=a_shape), rng.normal(size=b_shape)
    a.flat[0] = np.inf  # non-finite entries propagate as numpy's do
    assert np.array_equal(cross(a, b), np.cross(a, b), equal_nan=True)


def test_motion_cross_is_pinocchios_motion_cross_product():
    rng = np.random.default_rng(4)
    v, u = rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    expected = [pin.Motion(vi).cross(pin.Motion(ui)).vector for vi, ui in zip(v, u)]
    np.testing.assert_allclose(motion_cross(v, u), expected, rtol=0, atol=1e-12)
