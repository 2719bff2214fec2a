"""One simulated radar beside your robot: radar_node (+ rviz).

    ros2 launch radarays_ros radar.launch.py [world:=/path/world.sdf] [params:=config/ros/radar_*.yaml]
        [pose_source:=fixed|tf|gazebo] [fixed_pose:='[x, y, z, roll, pitch, yaw]'] [rviz:=false] [use_sim_time:=true]

Out of the box the radar stands still in the office world (pose_source:=fixed) and shows data in rviz.
"""
from typing import List

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare("radarays_ros")
    use_sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    return LaunchDescription([
        DeclareLaunchArgument("world", default_value=PathJoinSubstitution([share, "worlds", "office.sdf"]),
                              description="SDF world, model directory, URDF or mesh map"),
        DeclareLaunchArgument("params", default_value=PathJoinSubstitution([share, "config", "ros", "radar_navtech_cir204.yaml"]),
                              description="radar_node parameters (config/ros/radar_*.yaml)"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2 with rviz/radar.rviz"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="follow /clock"),
        # out of the box the sensor stands still inside the default world and publishes its frame on
        # /tf_static, so rviz shows data with nothing else running; pose_source:=tf follows your robot
        DeclareLaunchArgument("pose_source", default_value="fixed", choices=["fixed", "tf", "gazebo"],
                              description="fixed (fixed_pose), tf (world_frame <- the sensor frame) or gazebo"),
        DeclareLaunchArgument("fixed_pose", default_value="[1.0, 0.0, 1.0, 0.0, 0.0, 0.0]",
                              description="pose_source fixed: x y z roll pitch yaw (m, rad) in world_frame"),
        DeclareLaunchArgument("world_frame", default_value="map", description="the fixed frame of tf and rviz"),
        Node(package="radarays_ros", executable="radar_node", name="radar_node", output="screen",
             parameters=[LaunchConfiguration("params"),
                         {"world": LaunchConfiguration("world"), "use_sim_time": use_sim_time,
                          "pose_source": LaunchConfiguration("pose_source"),
                          "fixed_pose": ParameterValue(LaunchConfiguration("fixed_pose"), value_type=List[float]),
                          "world_frame": LaunchConfiguration("world_frame")}]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", PathJoinSubstitution([share, "rviz", "radar.rviz"])],
             parameters=[{"use_sim_time": use_sim_time}], condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
