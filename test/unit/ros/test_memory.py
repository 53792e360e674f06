"""The node's process-wide memory settings (``inertia_id_ros.ros.memory``)."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import pytest

from inertia_id_ros.ros.memory import (
    FASTDDS_PROFILES,
    FASTDDS_SETTINGS,
    fix_mmap_threshold,
    use_dynamic_reader_memory,
)

NAMESPACE = {"p": "http://www.eprosima.com"}


@pytest.mark.parametrize("rmw", [None, "rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp"])
@pytest.mark.parametrize(
    "distro, variable",
    [
        (None, "FASTDDS_DEFAULT_PROFILES_FILE"),
        ("kilted", "FASTDDS_DEFAULT_PROFILES_FILE"),
        ("jazzy", "FASTRTPS_DEFAULT_PROFILES_FILE"),
        ("humble", "FASTRTPS_DEFAULT_PROFILES_FILE"),
    ],
)
def test_fast_dds_gets_the_profiles(tmp_path, rmw, distro, variable):
    """The profile file under the name its Fast DDS reads (2: Humble to Jazzy; 3: later, and the
    wheels, which set no ROS_DISTRO), and only that one (Kilted warns about the old name)."""
    given = {
        **({} if rmw is None else {"RMW_IMPLEMENTATION": rmw}),
        **({} if distro is None else {"ROS_DISTRO": distro}),
    }
    environ = dict(given)
    message = use_dynamic_reader_memory(environ, working_directory=tmp_path)
    assert environ == {
        **given,
        variable: str(FASTDDS_PROFILES),
        "RMW_FASTRTPS_USE_QOS_FROM_XML": "1",
    }
    assert "allocate each sample" in message


@pytest.mark.parametrize("name", FASTDDS_SETTINGS)
def test_the_users_fast_dds_configuration_is_kept(tmp_path, name):
    environ = {name: "x"}
    message = use_dynamic_reader_memory(environ, working_directory=tmp_path)
    assert environ == {name: "x"}
    assert name in message


@pytest.mark.parametrize("name", ["DEFAULT_FASTDDS_PROFILES.xml", "DEFAULT_FASTRTPS_PROFILES.xml"])
def test_a_profile_file_in_the_working_directory_is_kept(tmp_path, name):
    (tmp_path / name).write_text("<profiles/>")
    environ: dict[str, str] = {}
    assert name in use_dynamic_reader_memory(environ, working_directory=tmp_path)
    assert environ == {}


def test_another_middleware_is_left_alone(tmp_path):
    environ = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    assert "rmw_cyclonedds_cpp" in use_dynamic_reader_memory(environ, working_directory=tmp_path)
    assert environ == {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}


def test_profiles_change_only_the_readers_memory_policy():
    """Default profiles: readers DYNAMIC; writers and discovery as rmw_fastrtps sets them."""
    root = ET.parse(FASTDDS_PROFILES).getroot()
    profiles = {child.tag.split("}")[1]: child for child in root}
    assert set(profiles) == {"participant", "data_writer", "data_reader"}
    assert all(p.get("is_default_profile") == "true" for p in profiles.values())
    assert (
        profiles["data_reader"].findtext("p:historyMemoryPolicy", namespaces=NAMESPACE) == "DYNAMIC"
    )
    writer = profiles["data_writer"]
    assert (
        writer.findtext("p:historyMemoryPolicy", namespaces=NAMESPACE)
        == "PREALLOCATED_WITH_REALLOC"
    )
    assert writer.findtext("p:qos/p:publishMode/p:kind", namespaces=NAMESPACE) == "SYNCHRONOUS"
    for endpoint in ("data_writer", "data_reader"):
        assert (
            profiles[endpoint].findtext("p:qos/p:data_sharing/p:kind", namespaces=NAMESPACE)
            == "OFF"
        )
    builtin = profiles["participant"].find("p:rtps/p:builtin", NAMESPACE)
    assert (
        builtin.findtext("p:readerHistoryMemoryPolicy", namespaces=NAMESPACE)
        == "PREALLOCATED_WITH_REALLOC"
    )
    assert (
        builtin.findtext("p:writerHistoryMemoryPolicy", namespaces=NAMESPACE)
        == "PREALLOCATED_WITH_REALLOC"
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_mmap_threshold_is_fixed_on_glibc():
    assert fix_mmap_threshold()
