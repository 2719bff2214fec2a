#!/usr/bin/env bash
# Set up .venv with everything radarays_ros needs, on a fresh Debian 12 / Python 3.11 machine.
#   bash scripts/setup_env.sh          # the package and its runtime dependencies
#   bash scripts/setup_env.sh --test   # plus test tools, ROS 2 Jazzy wheels (rclpy, messages, a locally
#                                      # built tf2_msgs), Gazebo Harmonic from ../shared/vendor (built once
#                                      # into a cache, scripts/setup_gz_harmonic.sh) and the transport test peers
set -euo pipefail
cd "$(dirname "$0")/.."
want_test=0
[ "${1:-}" = "--test" ] && want_test=1

need_apt=()
python3 -c "import venv, ensurepip" 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need_apt[@]}"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ $want_test = 1 ]; then
  .venv/bin/python -m pip install -q -e ".[test,ros]"
  for extra in scripts/setup_ros_test.sh scripts/setup_gz_harmonic.sh scripts/setup_gz_peer.sh; do
    [ -f "$extra" ] && bash "$extra"
  done
else
  .venv/bin/python -m pip install -q -e .
fi
echo "radarays_ros environment ready in .venv"
