"""Gazebo (Harmonic) + the demo robot + radarays_ros sensors + rviz.

    ros2 launch radarays_ros gazebo_sim.launch.py [world:=.../office.sdf world_name:=office]
                                                  [rig:=...yaml] [rviz:=false] [use_sim_time:=true]

Gazebo runs the world; ros_gz_bridge brings /clock and the robot's pose (PosePublisher, as /tf) to
ROS; robot_state_publisher adds the sensor mounts from the xacro; rviz shows it all. Gazebo names the
world frame after the world: a static transform map -> <world_name> and radarays_demo_robot ->
base_link tie the trees together.

sensor_rig follows the running world (gazebo.enable): its scene is a mirror of Gazebo's, built from
the same SDF file and moved by Gazebo's own pose messages over gz-transport (doors, other robots,
spawned and deleted models show up in the scans; the demo robot itself is left out by the rig's
`ignore`). Besides the radar and two lidars of the rig file it runs the sensors the world declares in
SDF (`<sensor type="custom" gz:type="radarays_radar">`, gpu_lidar blocks; try
world:=$(ros2 pkg prefix radarays_ros)/share/radarays_ros/worlds/gz_radarays_demo.sdf
world_name:=radarays_demo). With use_sim_time the scans are stamped with Gazebo's /clock; while
Gazebo is paused or gone no scans are published.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

ROBOT = "radarays_demo_robot"


def generate_launch_description():
    share = FindPackageShare("radarays_ros")
    world = LaunchConfiguration("world")
    use_sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    robot = ParameterValue(Command(["xacro ", PathJoinSubstitution([share, "urdf", "demo_robot.urdf.xacro"]),
                                    " gazebo:=true"]), value_type=str)
    gz_sim = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])),
        launch_arguments={"gz_args": ["-r ", world]}.items(),
    )
    return LaunchDescription([
        DeclareLaunchArgument("world", default_value=PathJoinSubstitution([share, "worlds", "office.sdf"]),
                              description="SDF world run by Gazebo and mirrored by the sensors"),
        DeclareLaunchArgument("world_name", default_value="office", description="the <world name> in that file"),
        DeclareLaunchArgument("rig", default_value=PathJoinSubstitution([share, "config", "ros", "rig_demo.yaml"]),
                              description="sensor_rig parameters"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2 with rviz/rig.rviz"),
        DeclareLaunchArgument("use_sim_time", default_value="true", description="follow Gazebo's /clock"),
        DeclareLaunchArgument("sdf_sensors", default_value="true",
                              description="also run the radarays / gpu_lidar sensors declared in the world's SDF"),
        gz_sim,
        Node(package="ros_gz_sim", executable="create", output="screen",
             arguments=["-name", ROBOT, "-topic", "robot_description", "-x", "2.0", "-y", "0.0", "-z", "0.05"]),
        Node(package="ros_gz_bridge", executable="parameter_bridge", name="gz_bridge", output="log",
             arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock",
                        f"/model/{ROBOT}/pose@tf2_msgs/msg/TFMessage[gz.msgs.Pose_V"],
             remappings=[(f"/model/{ROBOT}/pose", "/tf")]),
        Node(package="tf2_ros", executable="static_transform_publisher", name="map_to_world", output="log",
             arguments=["--frame-id", "map", "--child-frame-id", LaunchConfiguration("world_name")]),
        Node(package="tf2_ros", executable="static_transform_publisher", name="model_to_base", output="log",
             arguments=["--frame-id", ROBOT, "--child-frame-id", "base_link"]),
        Node(package="robot_state_publisher", executable="robot_state_publisher", output="log",
             parameters=[{"robot_description": robot, "use_sim_time": use_sim_time}]),
        Node(package="radarays_ros", executable="sensor_rig", name="sensor_rig", output="screen",
             parameters=[LaunchConfiguration("rig"), {
                 "world": world, "use_sim_time": use_sim_time,
                 "gazebo.enable": True,  # the scene mirrors the running world (radarays_ros.gazebo)
                 "gazebo.world": LaunchConfiguration("world_name"),
                 "gazebo.sdf": world,
                 "gazebo.sdf_sensors": ParameterValue(LaunchConfiguration("sdf_sensors"), value_type=bool),
             }]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", PathJoinSubstitution([share, "rviz", "rig.rviz"])],
             parameters=[{"use_sim_time": use_sim_time}], condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
