"""Shared test helpers: every test module imports its helpers from here (`from support.radar_scenes import
scene_with`), never from another test module. test/conftest.py puts test/ on sys.path.

    tracing        cast a few rays through a scene with the real backend (world tests)
    radar_scenes   small radar scenes: a material library, boxes and walls, a cheap RadarConfig
    lidar_bags     a small lidar room (fixture `room`); clouds written to a bag and read back by their fields
    scenario       a scenario file of a small room with a radar and a lidar
    frames         comparing two paths' frames (lidar pixel by pixel, radar column by column, bytes)
    warp           skip policy of the Warp tests and hit comparison against Embree
    warp_scenario  a scenario for host and device frames, its bag read back
    installs       colcon and wheel installs for tests that run the installed package
    netns_common   private network namespaces (Linux syscalls) for the ROS and Gazebo tests
    ros_harness    node processes and an independent rclpy probe (ROS tests)
    ros_radar      a cheap radar node in the ROS tests' room
    ros_gazebo     the ROS tests beside Gazebo: a gz partition of their own, clouds, waiting for a message
    gz_harmonic, gz_harness, gz_netns, hostile   Gazebo transport peers, the real server, hostile peers
    waits          wait_for: poll a condition until it holds or a deadline passes (tests that start processes)
"""
