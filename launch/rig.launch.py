"""The demo robot's sensors without Gazebo: sensor_rig + robot_state_publisher (+ a parked robot) + rviz.

    ros2 launch radarays_ros rig.launch.py world:=/path/world.sdf [rig:=...yaml] [x:=2.0 y:=0.0 yaw:=0.0]
                                           [static_base:=false] [rviz:=false] [use_sim_time:=true]

With static_base:=true (default) the robot stands at (x, y, yaw) in map; set it false when your
localisation or a simulator publishes map -> base_link.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare("radarays_ros")
    use_sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    robot = ParameterValue(Command(["xacro ", PathJoinSubstitution([share, "urdf", "demo_robot.urdf.xacro"])]),
                           value_type=str)
    return LaunchDescription([
        DeclareLaunchArgument("world", default_value=PathJoinSubstitution([share, "worlds", "office.sdf"]),
                              description="SDF world, model directory, URDF or mesh map"),
        DeclareLaunchArgument("rig", default_value=PathJoinSubstitution([share, "config", "ros", "rig_demo.yaml"]),
                              description="sensor_rig parameters"),
        DeclareLaunchArgument("x", default_value="2.0", description="parked robot: x of base_link in map (m)"),
        DeclareLaunchArgument("y", default_value="0.0", description="parked robot: y of base_link in map (m)"),
        DeclareLaunchArgument("yaw", default_value="0.0", description="parked robot: heading (rad)"),
        DeclareLaunchArgument("static_base", default_value="true", description="publish map -> base_link at x, y, yaw"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2 with rviz/rig.rviz"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="follow /clock"),
        Node(package="robot_state_publisher", executable="robot_state_publisher", output="log",
             parameters=[{"robot_description": robot, "use_sim_time": use_sim_time}]),
        Node(package="tf2_ros", executable="static_transform_publisher", name="base_pose", output="log",
             arguments=["--x", LaunchConfiguration("x"), "--y", LaunchConfiguration("y"), "--yaw", LaunchConfiguration("yaw"),
                        "--frame-id", "map", "--child-frame-id", "base_link"],
             condition=IfCondition(LaunchConfiguration("static_base"))),
        Node(package="radarays_ros", executable="sensor_rig", name="sensor_rig", output="screen",
             parameters=[LaunchConfiguration("rig"),
                         {"world": LaunchConfiguration("world"), "use_sim_time": use_sim_time}]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", PathJoinSubstitution([share, "rviz", "rig.rviz"])],
             parameters=[{"use_sim_time": use_sim_time}], condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
