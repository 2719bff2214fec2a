#!/usr/bin/env bash
# Build the Gazebo Harmonic stack (test infrastructure only, nothing of it goes into the package) from the
# release archives in ../shared/vendor/gz-harmonic/ (the checkout's sibling `shared/`) into a cache outside
# the checkout, keyed by the archives' hashes, and reuse it when it is complete.
#   bash scripts/setup_gz_harmonic.sh              # stage 1 + stage 2
#   bash scripts/setup_gz_harmonic.sh transport    # stage 1 only
#   bash scripts/setup_gz_harmonic.sh --print-prefix   # print the cache prefix (complete or not) and exit
# Stage 1 "transport": gz-cmake3 -> gz-utils2 -> gz-math7 -> gz-msgs10 -> gz-transport13, with the official
#   Python bindings (gz.transport13, gz.msgs10) under <prefix>/lib/python.
# Stage 2 "server": sdformat14 -> gz-common5 -> gz-plugin2 -> gz-fuel-tools9 -> gz-physics7 ->
#   gz-math7-python -> sdformat14-python -> gz-sim8, and gz-tools2 (the `gz` command): a headless `gz sim -s`
#   with TPE physics and only the systems RADARAYS_GZ_SIM_SYSTEMS names, plus Python systems: gz-sim8's
#   bindings (gz.sim8) and its python_system_loader, which imports gz.sim8 and sdformat14 (whose bindings
#   import gz.math7); those two are built standalone against the installed libraries (their archives' python
#   folders), not again whole. gz-sim8 is built without its GUI and rendering components (`gz sim -g` says
#   so and fails), so gz-gui8, gz-rendering8, gz-sensors8 and Qt are not needed: the headless server's core
#   library includes none of them; only the systems and GUI plugins not built here do.
# Environment: RADARAYS_GZ_CACHE (default /var/cache/radarays, or ~/.cache/radarays when not writable),
#   RADARAYS_GZ_JOBS (default 2), RADARAYS_GZ_VENDOR (default ../shared/vendor/gz-harmonic,
#   else ../../shared/vendor/gz-harmonic).
# Each package gets a stamp when installed (an interrupted build resumes): line 1 its wall seconds, line 2 its
# configuration (flags, gz-sim8's systems and trim), line 3 the CPU seconds (user + sys) of its configure, build
# and install: a package whose configuration changed is built again, and only it; each stage's stamp is written
# when all of its packages are current.
set -euo pipefail
cd "$(dirname "$0")/.."
stage="all"
print_prefix=0
case "${1:-}" in
  "" | all) stage="all" ;;
  transport) stage="transport" ;;
  --print-prefix) print_prefix=1 ;;
  *) echo "setup_gz_harmonic.sh: unknown argument '$1' (allowed: all, transport, --print-prefix)" >&2; exit 2 ;;
esac

# The checkout's sibling shared/ (a git worktree one level deeper finds it one level further up).
vendor="${RADARAYS_GZ_VENDOR:-}"
if [ -z "$vendor" ]; then
  for candidate in ../shared/vendor/gz-harmonic ../../shared/vendor/gz-harmonic; do
    if [ -d "$candidate" ]; then vendor="$candidate"; break; fi
  done
fi
vendor="${vendor:-../shared/vendor/gz-harmonic}"
if ! ls "$vendor"/gz-transport13_*.tar.xz > /dev/null 2>&1; then
  echo "setup_gz_harmonic.sh: no Gazebo Harmonic archives in $vendor" >&2
  exit 1
fi
vendor="$(cd "$vendor" && pwd)"
key="$(cd "$vendor" && sha256sum ./*.tar.xz | sort | sha256sum | cut -c1-12)"
cache_root="${RADARAYS_GZ_CACHE:-/var/cache/radarays}"
if ! mkdir -p "$cache_root" 2> /dev/null || [ ! -w "$cache_root" ]; then
  cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/radarays"
  mkdir -p "$cache_root"
fi
cache="$cache_root/gz-harmonic-$key"
prefix="$cache/install"
if [ $print_prefix = 1 ]; then
  echo "$prefix"
  exit 0
fi
jobs="${RADARAYS_GZ_JOBS:-2}"
mkdir -p "$cache/stamps" "$cache/src" "$cache/build" "$prefix"
# One build at a time per cache (a second caller waits, then finds the stamps).
exec 9> "$cache/lock"
if ! flock -n 9; then
  echo "setup_gz_harmonic.sh: another build of $cache is running; waiting for it"
  flock 9
fi

stage1_packages=(gz-cmake3 gz-utils2 gz-math7 gz-msgs10 gz-transport13)
stage2_packages=(sdformat14 gz-common5 gz-plugin2 gz-fuel-tools9 gz-physics7 gz-math7-python sdformat14-python
  gz-sim8 gz-tools2)
# libeigen3-dev in stage 1: gz-math7 builds its eigen3 component only when Eigen is there, and gz-physics7
# (stage 2) needs that component.
stage1_apt=(build-essential cmake pkg-config libprotobuf-dev protobuf-compiler libprotoc-dev libzmq3-dev
  cppzmq-dev uuid-dev libsqlite3-dev libtinyxml2-dev python3-dev pybind11-dev libeigen3-dev)
# No Qt (gz-gui8's) and no FFmpeg (gz-common5's optional av component, which only systems not built here use);
# GDAL stays: gz-physics7's mesh and TPE plugins need gz-common5's geospatial component.
stage2_apt=(libfreeimage-dev libgts-dev libgdal-dev libassimp-dev libcurl4-openssl-dev libjsoncpp-dev libzip-dev
  ruby)

install_apt() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return
  fi
  echo "setup_gz_harmonic.sh: installing apt packages: ${missing[*]}"
  local sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "${missing[@]}" \
    > "$cache/apt-$(date +%s).log"
}

# Per-package configure flags beyond the common ones (the smallest build that gives what the tests run).
# Unity builds (CMake compiles a package's sources in batches of 8, so the heavy gz/pybind11/protobuf headers
# are parsed once a batch) and -O1 where the templates are heaviest: CPU seconds of the build on this 2-core
# AMD EPYC (stamps' cpu_s), before -> after: gz-sim8 1071 -> 479, sdformat14 469 -> 235, gz-math7-python
# 458 -> 184, sdformat14-python 523 -> 171, gz-msgs10 640 -> 580 (its generated sources stay out of the batches).
unity="-DCMAKE_UNITY_BUILD=ON"
level_o1="-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DCMAKE_CXX_FLAGS=-DNDEBUG"  # Release's -O3 -> -O1, NDEBUG kept
package_flags() {
  case "$1" in
    # (gz-physics7 not in a unity build: its TPE plugin batches gz::physics::sdf with ::sdf, ambiguous)
    gz-math7 | gz-utils2 | gz-plugin2 | gz-physics7) echo "-DSKIP_PYBIND11=ON" ;;
    gz-common5 | gz-fuel-tools9) echo "-DSKIP_PYBIND11=ON $unity" ;;
    gz-transport13) echo "-DPython3_EXECUTABLE=/usr/bin/python3 $unity" ;;
    gz-msgs10) echo "-DPython3_EXECUTABLE=/usr/bin/python3 $level_o1" ;;
    gz-sim8) echo "-DPython3_EXECUTABLE=/usr/bin/python3 $unity $level_o1" ;;
    # Bindings only, at -O0 without LTO (Release would add -O3; pybind11 adds -flto unless IPO is set): pybind11
    # code compiles several times faster so, and a system makes a few calls per step.
    gz-math7-python | sdformat14-python)
      echo "-DPython3_EXECUTABLE=/usr/bin/python3 -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O0 -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF $unity" ;;
    sdformat14) echo "-DUSE_INTERNAL_URDF=ON -DSKIP_PYBIND11=ON $unity $level_o1" ;;
    *) echo "" ;;
  esac
}

# gz-sim8 trimmed to a headless server with the systems the tests and the demo worlds list (most of its build
# time is the ~70 systems and ~30 GUI plugins): RADARAYS_GZ_SIM_SYSTEMS names the src/systems folders kept.
sim_systems="${RADARAYS_GZ_SIM_SYSTEMS:-physics user_commands scene_broadcaster velocity_control python_system_loader}"

# What a package's stamp records: its flags, and for gz-sim8 the systems built and that it is headless.
package_config() {
  local config
  config="$(package_flags "$1")"
  [ "$1" = "gz-sim8" ] && config="$config systems=$sim_systems headless=no-gui-rendering-sensors-av+events"
  echo "$config"
}
# The configuration a stamp without one (written by an earlier version of this script) stands for.
legacy_config() {
  case "$1" in
    gz-sim8) echo "-DSKIP_PYBIND11=ON systems=physics user_commands scene_broadcaster velocity_control" ;;
    *) package_config "$1" ;;
  esac
}
# Archive and folder in it that a package builds from (the -python packages: the bindings alone).
package_archive() {
  case "$1" in
    *-python) echo "${1%-python}" ;;
    *) echo "$1" ;;
  esac
}
package_subdir() {
  case "$1" in
    gz-math7-python) echo "src/python_pybind11" ;;
    sdformat14-python) echo "python" ;;
    *) echo "" ;;
  esac
}
trim_sources() {
  local name="$1" src="$2"
  [ "$name" = "gz-sim8" ] || return 0
  local keep="" dir
  for dir in $sim_systems; do keep="$keep|$dir"; done
  sed -i -E "s/^(\s*)add_subdirectory\((${keep#|})\)/\1KEEP_SYSTEM(\2)/; s/^(\s*)add_subdirectory\(/\1# not built here: add_subdirectory(/; s/KEEP_SYSTEM\(/add_subdirectory(/" \
    "$src/src/systems/CMakeLists.txt"
  # Headless: no gui and rendering components, so neither gz-gui8 (and Qt), gz-rendering8 nor gz-sensors8 (only
  # systems not built here use it) is looked for, nor gz-common5's av component; `runGui` (which `gz sim`'s Ruby
  # front end binds) stays, and says so. The core library uses gz-common5's events (gz::common::Event), which it
  # got through gz-gui8's link before: it links them itself.
  perl -0pi -e 's/\ngz_find_package\(gz-gui8 REQUIRED\)/\n# headless: no gz-gui8/; s/\ngz_find_package \(Qt5\n.*?\)\n/\n# headless: no Qt5\n/s;
    s/\ngz_find_package\(gz-sensors8 REQUIRED.*?\n\)\n/\n# headless: no gz-sensors8\n/s;
    s/\ngz_find_package\(gz-rendering8 REQUIRED\)/\n# headless: no gz-rendering8/; s/\n    av\n    events\n/\n    events\n/' \
    "$src/CMakeLists.txt"
  perl -0pi -e 's/^add_subdirectory\((rendering|gui)\)$/# headless: add_subdirectory($1)/mg;
    s/^    gz-sim\$\{PROJECT_VERSION_MAJOR\}-gui\n//m; s/^(add_executable\(runGui|target_link_libraries\(runGui)/# headless: $1/mg;
    s/^  gz-gui\$\{GZ_GUI_VER\}::gz-gui\$\{GZ_GUI_VER\}\n/  gz-common\$\{GZ_COMMON_VER\}::events\n/m; s/^  gz-rendering\$\{GZ_RENDERING_VER\}::core\n//m' \
    "$src/src/CMakeLists.txt"
  perl -0pi -e 's/^#include "gz\/sim\/gui\/Gui.hh"$/#include <iostream>  \/\/ headless: no GUI header/m;
    s/return gz::sim::gui::runGui\(argc, argv, _guiConfig, _file, _waitGui,\s*_renderEngine, _renderEngineGuiApiBackend\);/(void)argc; (void)_guiConfig; (void)_file; (void)_waitGui; (void)_renderEngine; (void)_renderEngineGuiApiBackend;\n  std::cerr << "gz sim: built headless by setup_gz_harmonic.sh (no GUI): use gz sim -s" << std::endl;\n  return -1;/' \
    "$src/src/gz.cc"
  local left
  left="$(grep -nE '^gz_find_package ?\((gz-gui8|Qt5|gz-sensors8|gz-rendering8)|^add_subdirectory\((gui|rendering)\)' "$src/CMakeLists.txt" "$src/src/CMakeLists.txt"; grep -n 'gui::runGui\|sim/gui/Gui.hh' "$src/src/gz.cc")" || true
  if [ -n "$left" ] || grep -qE '^\s+av$' "$src/CMakeLists.txt"; then
    echo "setup_gz_harmonic.sh: trimming gz-sim8 to a headless server left: $left" >&2
    exit 1
  fi
}

# CPU time (user + sys, clock ticks) of this shell's finished children (the compilers, through cmake and make,
# each waited for): a package's CPU seconds, which a loaded machine does not inflate as it does wall seconds.
children_cpu_ticks() {
  local stat
  read -r -a stat < /proc/$$/stat
  echo $((stat[15] + stat[16]))
}

build_package() {
  local name="$1"
  local stamp="$cache/stamps/$name.done"
  local config recorded
  config="$(package_config "$name")"
  if [ -f "$stamp" ]; then
    recorded="$(sed -n 2p "$stamp")"
    [ -n "$recorded" ] || recorded="$(legacy_config "$name")"
    [ "$recorded" = "$config" ] && return
    echo "setup_gz_harmonic.sh: $name was built as '$recorded'; building it again as '$config'"
  fi
  local archive
  archive="$(ls "$vendor"/"$(package_archive "$name")"_*.tar.xz | head -n1)"
  local src="$cache/src/$name"
  rm -rf "$src" "$cache/build/$name"
  mkdir -p "$src" "$cache/build/$name"
  tar -xf "$archive" -C "$src" --strip-components=1
  trim_sources "$name" "$src"
  local subdir
  subdir="$(package_subdir "$name")"
  [ -z "$subdir" ] || src="$src/$subdir"
  local started=$SECONDS cpu_before
  cpu_before="$(children_cpu_ticks)"
  local log="$cache/build/$name.log"
  # shellcheck disable=SC2046
  # In the build folder: gz-physics' install step makes plugin symlinks in the working directory.
  if ! (cd "$cache/build/$name" && cmake -S "$src" -B "$cache/build/$name" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
        -DBUILD_DOCS=OFF -DSKIP_SWIG=ON -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_PREFIX_PATH="$prefix" \
        $(package_flags "$name") \
      && nice -n 10 cmake --build "$cache/build/$name" -j"$jobs" \
      && cmake --install "$cache/build/$name") > "$log" 2>&1; then
    echo "setup_gz_harmonic.sh: building $name failed; the last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  local cpu_s
  cpu_s="$(( ($(children_cpu_ticks) - cpu_before) / $(getconf CLK_TCK) ))"
  rm -rf "$cache/src/$name" "$cache/build/$name"
  echo "setup_gz_harmonic.sh: $name built in $((SECONDS - started)) s (CPU $cpu_s s, user + sys)"
  printf '%s\n%s\n%s\n' "$((SECONDS - started))" "$config" "cpu_s=$cpu_s" > "$stamp"
}

export CMAKE_PREFIX_PATH="$prefix"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/share/pkgconfig"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$prefix/bin:$PATH"

run_stage() {
  local stage_name="$1"
  shift
  local stamp="$prefix/.stage-$stage_name-complete"
  # Each package's stamp is checked (one whose configuration changed is built again, and only it).
  for p in "$@"; do build_package "$p"; done
  if [ -f "$stamp" ]; then
    echo "setup_gz_harmonic.sh: stage $stage_name present in $prefix"
    return
  fi
  date -u +%FT%TZ > "$stamp"
  echo "setup_gz_harmonic.sh: stage $stage_name complete in $prefix"
}

install_apt "${stage1_apt[@]}"
run_stage transport "${stage1_packages[@]}"
if [ "$stage" = "all" ]; then
  install_apt "${stage2_apt[@]}"
  if [ ! -f "$prefix/.stage-server-complete" ] && [ ! -d "$prefix/lib/cmake/gz-math7-eigen3" ]; then
    rm -f "$cache/stamps/gz-math7.done"  # a gz-math7 built before Eigen was installed: again, with it
    build_package gz-math7
  fi
  run_stage server "${stage2_packages[@]}"
fi
echo "Gazebo Harmonic in $prefix: LD_LIBRARY_PATH=$prefix/lib PYTHONPATH=$prefix/lib/python" \
  "GZ_CONFIG_PATH=$prefix/share/gz PATH=$prefix/bin:\$PATH"
