#!/usr/bin/env bash
# Install (idempotently) what the Gazebo transport tests' real peer needs and build it:
# Debian 12's C++ Ignition Transport 11 + Ignition Msgs 8 (gz-transport wire version 10, the same as
# Gazebo Harmonic's gz-transport 13), the protobuf compiler, and test/gazebo/peer -> build/gz_peer/gz_peer;
# with Harmonic built (scripts/setup_gz_harmonic.sh) also the gz-transport13 peer -> build/gz_peer13/gz_peer.
#   bash scripts/setup_gz_peer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libignition-transport-dev libignition-msgs-dev protobuf-compiler libprotobuf-dev cmake g++ make iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
fi
mkdir -p build/gz_peer
cmake -S test/gazebo/peer -B build/gz_peer -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build/gz_peer -j2 > /dev/null
echo "gz-transport test peer built: build/gz_peer/gz_peer"
# The same peer on Gazebo Harmonic's gz-transport13, when scripts/setup_gz_harmonic.sh has built it.
gz_prefix="$(bash scripts/setup_gz_harmonic.sh --print-prefix 2> /dev/null || true)"
if [ -n "$gz_prefix" ] && [ -f "$gz_prefix/.stage-transport-complete" ]; then
  mkdir -p build/gz_peer13
  cmake -S test/gazebo/peer -B build/gz_peer13 -DCMAKE_BUILD_TYPE=Release -DGZ_PEER_HARMONIC=ON \
    -DCMAKE_PREFIX_PATH="$gz_prefix" > /dev/null
  cmake --build build/gz_peer13 -j2 > /dev/null
  echo "gz-transport13 test peer built: build/gz_peer13/gz_peer"
fi
