"""The batch CDR decoder against rclpy's own deserialization, field by field, on randomized
messages: names, stamps, empty and partial arrays, NaN and Inf, both byte orders; truncated and
corrupt buffers refused and counted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inertia_id_ros.formats.cdr import IMU_COVARIANCE, decode

pytest.importorskip("rclpy")

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402

JOINT_STATE, WRENCH, IMU = (
    "sensor_msgs/msg/JointState",
    "geometry_msgs/msg/WrenchStamped",
    "sensor_msgs/msg/Imu",
)
TYPES = {JOINT_STATE: JointState, WRENCH: WrenchStamped, IMU: Imu}
STORE = get_typestore(Stores.ROS2_KILTED)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, 5e-324])


def _values(rng: np.random.Generator, n: int) -> list[float]:
    values = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
    special = rng.random(n) < 0.1
    values[special] = rng.choice(SPECIAL, size=int(special.sum()))
    return values.tolist()


def _stamp(msg, rng: np.random.Generator) -> None:
    msg.header.stamp.sec = int(rng.integers(-(2**31), 2**31))
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9))


def random_joint_state(rng: np.random.Generator, names: list[str]) -> JointState:
    msg = JointState()
    _stamp(msg, rng)
    msg.header.frame_id = "".join(rng.choice(list("abc_/"), size=rng.integers(0, 6)))
    msg.name = names
    n = len(names)
    msg.position = _values(rng, n)
    msg.velocity = _values(rng, int(rng.choice([0, n, max(n - 1, 0)])))  # empty, full, partial
    msg.effort = _values(rng, int(rng.choice([0, n])))
    return msg


def random_wrench(rng: np.random.Generator) -> WrenchStamped:
    msg = WrenchStamped()
    _stamp(msg, rng)
    msg.header.frame_id = "ft_sensor" if rng.random() < 0.8 else "tool"
    w = _values(rng, 6)
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z, t.x, t.y, t.z = w
    return msg


def random_imu(rng: np.random.Generator) -> Imu:
    msg = Imu()
    _stamp(msg, rng)
    msg.header.frame_id = "imu_link"
    q = msg.orientation
    q.x, q.y, q.z, q.w = _values(rng, 4)
    for name in ("angular_velocity", "linear_acceleration"):
        v = getattr(msg, name)
        v.x, v.y, v.z = _values(rng, 3)
        setattr(msg, f"{name}_covariance", _values(rng, IMU_COVARIANCE))
    msg.orientation_covariance = _values(rng, IMU_COVARIANCE)
    return msg


def big_endian(msg, msgtype: str) -> bytes:
    """``msg`` (an rclpy message) serialized big-endian (rosbags' serializer)."""
    types = STORE.types

    def header():
        stamp = types["builtin_interfaces/msg/Time"](
            sec=msg.header.stamp.sec, nanosec=msg.header.stamp.nanosec
        )
        return types["std_msgs/msg/Header"](stamp=stamp, frame_id=msg.header.frame_id)

    def vector(v, kind="geometry_msgs/msg/Vector3"):
        return types[kind](**{k: getattr(v, k) for k in "xyzw" if hasattr(v, k)})

    arrays = {k: np.array(v, dtype=float) for k, v in expected_fields(msgtype, msg).items()}
    if msgtype == JOINT_STATE:
        out = types[msgtype](header=header(), name=list(msg.name), **arrays)
    elif msgtype == WRENCH:
        wrench = types["geometry_msgs/msg/Wrench"](
            force=vector(msg.wrench.force), torque=vector(msg.wrench.torque)
        )
        out = types[msgtype](header=header(), wrench=wrench)
    else:
        out = types[msgtype](
            header=header(),
            orientation=vector(msg.orientation, "geometry_msgs/msg/Quaternion"),
            angular_velocity=vector(msg.angular_velocity),
            linear_acceleration=vector(msg.linear_acceleration),
            **{k: v for k, v in arrays.items() if k.endswith("covariance")},
        )
    return bytes(STORE.serialize_cdr(out, msgtype, little_endian=False))


def same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(
        np.all((a == b) | (np.isnan(a) & np.isnan(b))) and np.all(np.signbit(a) == np.signbit(b))
    )


def expected_fields(msgtype: str, msg) -> dict[str, list[float]]:
    if msgtype == JOINT_STATE:
        return {k: list(getattr(msg, k)) for k in ("position", "velocity", "effort")}
    if msgtype == WRENCH:
        f, t = msg.wrench.force, msg.wrench.torque
        return {"wrench": [f.x, f.y, f.z, t.x, t.y, t.z]}
    q = msg.orientation
    out = {"orientation": [q.x, q.y, q.z, q.w]}
    for name in ("angular_velocity", "linear_acceleration"):
        v = getattr(msg, name)
        out[name] = [v.x, v.y, v.z]
    for name in ("orientation", "angular_velocity", "linear_acceleration"):
        out[f"{name}_covariance"] = list(getattr(msg, f"{name}_covariance"))
    return out


def check_batch(msgtype: str, buffers: list[bytes]) -> None:
    batch = decode(msgtype, buffers)
    assert batch.refused == [] and batch.decoded == len(buffers)
    index = 0
    for run in batch.runs:
        assert run.first == index
        for k in range(len(run)):
            msg = deserialize_message(buffers[index + k], TYPES[msgtype])  # the reference
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            assert run.t[k] == stamp and run.frame_id == msg.header.frame_id
            if msgtype == JOINT_STATE:
                assert run.names == tuple(msg.name)
            for key, values in expected_fields(msgtype, msg).items():
                assert same(run.arrays[key][k], values), (key, run.arrays[key][k], values)
        index += len(run)


@pytest.mark.parametrize("little_endian", [True, False], ids=["little", "big"])
@pytest.mark.parametrize("msgtype", [JOINT_STATE, WRENCH, IMU])
def test_randomized_messages_decode_as_rclpy_deserializes_them(msgtype, little_endian):
    rng = np.random.default_rng(7)
    name_sets = [["j1", "j2", "j3"], ["j2", "j1", "j3"], ["shoulder", "elbow"], [], ["a" * 17]]
    messages = []
    for _ in range(300):
        if msgtype == JOINT_STATE:
            names = name_sets[0] if rng.random() < 0.7 else name_sets[rng.integers(len(name_sets))]
            messages.append(random_joint_state(rng, names))
        else:
            messages.append((random_wrench if msgtype == WRENCH else random_imu)(rng))
    if little_endian:
        buffers = [bytes(serialize_message(m)) for m in messages]
    else:
        buffers = [big_endian(m, msgtype) for m in messages]
        assert all(b[:2] == b"\x00\x00" for b in buffers)
    check_batch(msgtype, buffers)


def test_a_run_of_one_layout_is_read_at_once():
    rng = np.random.default_rng(1)
    names = ["j1", "j2"]
    buffers = []
    for _ in range(50):
        msg = random_joint_state(rng, names)
        msg.header.frame_id, msg.velocity, msg.effort = "", _values(rng, 2), []
        buffers.append(bytes(serialize_message(msg)))
    batch = decode(JOINT_STATE, buffers)
    assert len(batch.runs) == 1 and batch.runs[0].arrays["position"].shape == (50, 2)
    assert batch.runs[0].arrays["effort"].shape == (50, 0)


def test_truncated_and_corrupt_buffers_are_refused_and_counted():
    rng = np.random.default_rng(2)
    good = [bytes(serialize_message(random_wrench(rng))) for _ in range(4)]
    joint_msg = random_joint_state(rng, ["j1", "j2"])
    joint_msg.header.frame_id = ""  # the names' count at byte 20
    joint = bytes(serialize_message(joint_msg))
    huge_count = bytearray(joint)
    huge_count[20:24] = (2**31).to_bytes(4, "little")  # the names' count, past the buffer
    buffers = [good[0], good[1][:30], good[2], b"\x00\x07" + good[3][2:], b"", good[3]]
    batch = decode(WRENCH, buffers)
    assert [index for index, _ in batch.refused] == [1, 3, 4]
    assert "truncated" in batch.refused[0][1] and "encapsulation" in batch.refused[1][1]
    assert batch.decoded == 3 and [run.first for run in batch.runs] == [0, 2, 5]
    for cut in range(len(joint)):  # every truncation of a joint state is refused, none raises
        refused = decode(JOINT_STATE, [joint[:cut]]).refused
        assert len(refused) == 1 or cut >= len(joint) - 8  # trailing bytes may be padding
    assert decode(JOINT_STATE, [bytes(huge_count)]).refused[0][1].startswith("a length")


def test_stamps_keep_nanoseconds():
    msg = WrenchStamped()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1_700_000_000, 999_999_999
    run = decode(WRENCH, [bytes(serialize_message(msg))]).runs[0]
    assert math.isclose(run.t[0], 1_700_000_000.999_999_999, rel_tol=0, abs_tol=2e-7)
