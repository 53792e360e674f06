"""Launch the inertia_id node with a parameter file and a URDF.

    ros2 launch inertia_id_ros identify.launch.py urdf_path:=/path/robot.urdf \
        config:=$(ros2 pkg prefix inertia_id_ros)/share/inertia_id_ros/config/panda_payload.yaml

Under DDS-Security (``ROS_SECURITY_ENABLE=true``, docs/how-to/secure-the-wizard.md) the node
runs in the enclave ``enclave`` (``/inertia_id``).
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    """The node with the ``config`` parameter file and ``urdf_path``, in ``namespace``."""
    return LaunchDescription(
        [
            DeclareLaunchArgument("config", description="YAML parameter file of the node"),
            DeclareLaunchArgument("urdf_path", description="URDF of the robot"),
            DeclareLaunchArgument(
                "namespace", default_value="", description="namespace of the node"
            ),
            DeclareLaunchArgument(
                "enclave",
                default_value="/inertia_id",
                description="DDS-Security enclave, used when ROS_SECURITY_ENABLE="
                "true (inertia-id keystore create)",
            ),
            Node(
                package="inertia_id_ros",
                executable="inertia_id_node",
                name="inertia_id",
                namespace=LaunchConfiguration("namespace"),
                parameters=[
                    LaunchConfiguration("config"),
                    {"urdf_path": LaunchConfiguration("urdf_path")},
                ],
                ros_arguments=["--enclave", LaunchConfiguration("enclave")],
                output="screen",
            ),
        ]
    )
