"""One simulated lidar beside your robot: lidar_node (+ rviz).

    ros2 launch radarays_ros lidar.launch.py world:=/path/world.sdf [params:=config/ros/lidar_os1_64.yaml] [rviz:=false]
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
        DeclareLaunchArgument("params", default_value=PathJoinSubstitution([share, "config", "ros", "lidar_vlp_16.yaml"]),
                              description="lidar_node parameters (config/ros/lidar_*.yaml, one per preset)"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2 with rviz/lidar.rviz"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="follow /clock"),
        # out of the box the sensor stands still inside the default world and publishes its frame on
        # /tf_static, so rviz shows data with nothing else running; pose_source:=tf follows your robot
        DeclareLaunchArgument("pose_source", default_value="fixed", choices=["fixed", "tf", "gazebo"],
                              description="fixed (fixed_pose), tf (world_frame <- the sensor frame) or gazebo"),
        DeclareLaunchArgument("fixed_pose", default_value="[1.0, 0.0, 1.0, 0.0, 0.0, 0.0]",
                              description="pose_source fixed: x y z roll pitch yaw (m, rad) in world_frame"),
        DeclareLaunchArgument("world_frame", default_value="map", description="the fixed frame of tf and rviz"),
        Node(package="radarays_ros", executable="lidar_node", name="lidar_node", output="screen",
             parameters=[LaunchConfiguration("params"),
                         {"world": LaunchConfiguration("world"), "use_sim_time": use_sim_time,
                          "pose_source": LaunchConfiguration("pose_source"),
                          "fixed_pose": ParameterValue(LaunchConfiguration("fixed_pose"), value_type=List[float]),
                          "world_frame": LaunchConfiguration("world_frame")}]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", PathJoinSubstitution([share, "rviz", "lidar.rviz"])],
             parameters=[{"use_sim_time": use_sim_time}], condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
