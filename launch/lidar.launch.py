"""One simulated lidar beside your robot: lidar_node (+ rviz).

    ros2 launch radarays_ros lidar.launch.py world:=/path/world.sdf [params:=config/ros/lidar_os1_64.yaml] [rviz:=false]
        [lifecycle:=true]   # a managed node, configured and activated here, as ouster-ros' driver.launch.py
                            # does with auto_start (lifecycle:=true auto_start:=false: stays unconfigured)
"""
from typing import List

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, RegisterEventHandler
from launch.conditions import IfCondition, UnlessCondition
from launch.events import matches_action
from launch.substitutions import AndSubstitution, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode, Node
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare
from lifecycle_msgs.msg import Transition


def generate_launch_description():
    share = FindPackageShare("radarays_ros")
    use_sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    parameters = [LaunchConfiguration("params"),
                  {"world": LaunchConfiguration("world"), "use_sim_time": use_sim_time,
                   "pose_source": LaunchConfiguration("pose_source"),
                   "fixed_pose": ParameterValue(LaunchConfiguration("fixed_pose"), value_type=List[float]),
                   "world_frame": LaunchConfiguration("world_frame")}]
    lifecycle = LaunchConfiguration("lifecycle")
    managed = LifecycleNode(package="radarays_ros", executable="lidar_node", name="lidar_node", namespace="",
                            output="screen", arguments=["--lifecycle"], parameters=parameters,
                            condition=IfCondition(lifecycle))
    auto_start = IfCondition(AndSubstitution(lifecycle, LaunchConfiguration("auto_start")))
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
        DeclareLaunchArgument("lifecycle", default_value="false", choices=["true", "false"],
                              description="run lidar_node as a managed (lifecycle) node, as ouster-ros' os_driver"),
        DeclareLaunchArgument("auto_start", default_value="true", choices=["true", "false"],
                              description="lifecycle: configure and activate it at once (ouster-ros' auto_start)"),
        Node(package="radarays_ros", executable="lidar_node", name="lidar_node", output="screen",
             parameters=parameters, condition=UnlessCondition(lifecycle)),
        managed,
        RegisterEventHandler(OnStateTransition(
            target_lifecycle_node=managed, goal_state="inactive",
            entities=[EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(managed),
                                                  transition_id=Transition.TRANSITION_ACTIVATE))]),
            condition=auto_start),
        EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(managed),
                                    transition_id=Transition.TRANSITION_CONFIGURE), condition=auto_start),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", PathJoinSubstitution([share, "rviz", "lidar.rviz"])],
             parameters=[{"use_sim_time": use_sim_time}], condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
