"""scripts/setup_gz_harmonic.sh trims gz-sim 8 to a headless server (no gui and rendering components, so no
gz-gui8, Qt, gz-rendering8 or gz-sensors8 to build): checked on the vendored gz-sim8 archive's own CMake
files and gz.cc, without building anything, and the script refuses an archive whose files it cannot trim
(a new gz-sim release) instead of building the whole GUI stack unnoticed for an hour."""
from __future__ import annotations

import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

from support import gz_harmonic

pytestmark = pytest.mark.slow  # starts bash and perl

TRIMMED = ["CMakeLists.txt", "src/CMakeLists.txt", "src/gz.cc", "src/systems/CMakeLists.txt", "src/gui/CMakeLists.txt"]


def _archive() -> Path:
    candidates = [os.environ.get("RADARAYS_GZ_VENDOR", ""), gz_harmonic.REPO.parent / "shared/vendor/gz-harmonic",
                  gz_harmonic.REPO.parents[1] / "shared/vendor/gz-harmonic"]
    for vendor in candidates:
        found = sorted(Path(vendor).glob("gz-sim8_*.tar.xz")) if vendor else []
        if found:
            return found[0]
    pytest.skip("no gz-sim8 archive in ../shared/vendor/gz-harmonic")


def _extract(tmp_path: Path) -> Path:
    with tarfile.open(_archive()) as tar:
        members = [m for m in tar.getmembers() if m.name.split("/", 1)[-1] in TRIMMED]
        tar.extractall(tmp_path, members=members, filter="data")
    (root,) = {tmp_path / m.name.split("/", 1)[0] for m in members}
    return root


def _trim(src: Path, systems: str = "physics python_system_loader") -> subprocess.CompletedProcess:
    script = (f'sim_systems="{systems}"\n'
              f'eval "$(sed -n \'/^trim_sources()/,/^}}/p\' {gz_harmonic.SETUP})"\n'
              f'trim_sources gz-sim8 "{src}"\n')
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=60)


def test_gz_sim8_is_trimmed_to_a_headless_server(tmp_path):
    src = _extract(tmp_path)
    before = (src / "CMakeLists.txt").read_text()
    assert "gz_find_package(gz-gui8 REQUIRED)" in before  # the archive has what the trim removes
    done = _trim(src)
    assert done.returncode == 0, done.stderr
    top = (src / "CMakeLists.txt").read_text()
    for wanted in ("gz-gui8", "Qt5", "gz-sensors8", "gz-rendering8"):
        assert not re.search(rf"^gz_find_package ?\({wanted}\b", top, re.M), wanted
    common = re.search(r"gz_find_package\(gz-common5\s+COMPONENTS(.*?)REQUIRED", top, re.S).group(1).split()
    assert common == ["events", "graphics", "io", "profiler"]  # no av: FFmpeg is not needed
    assert "gz_find_package(gz-physics7" in top and "gz_find_package(sdformat14 REQUIRED)" in top
    lib = (src / "src/CMakeLists.txt").read_text()
    assert not re.search(r"^add_subdirectory\((gui|rendering)\)", lib, re.M)
    assert re.search(r"^add_subdirectory\(systems\)", lib, re.M)
    assert "gz-gui${GZ_GUI_VER}" not in lib and "gz-rendering${GZ_RENDERING_VER}::core" not in lib
    assert "gz-sim${PROJECT_VERSION_MAJOR}-gui" not in lib
    # gz::common::Event came through gz-gui8's link: without it libgz-sim8.so has undefined symbols at load
    core_link = re.search(r"target_link_libraries\(\$\{PROJECT_LIBRARY_TARGET_NAME\}\s+PUBLIC(.*?)PRIVATE", lib, re.S)
    assert "gz-common${GZ_COMMON_VER}::events" in core_link.group(1).split()
    gz_cc = (src / "src/gz.cc").read_text()
    assert "gz/sim/gui/Gui.hh" not in gz_cc and "gui::runGui" not in gz_cc
    assert re.search(r'extern "C" int runGui\(.*?return -1;', gz_cc, re.S)  # `gz sim`'s Ruby binds it
    systems = (src / "src/systems/CMakeLists.txt").read_text()
    kept = re.findall(r"^add_subdirectory\((\w+)\)", systems, re.M)
    assert kept == ["physics", "python_system_loader"]


def test_an_archive_the_trim_does_not_fit_is_refused(tmp_path):
    src = _extract(tmp_path)
    top = src / "CMakeLists.txt"
    # A release that spells its Qt lookup otherwise: the trim cannot remove it, and says so.
    top.write_text(top.read_text().replace("gz_find_package (Qt5\n", "gz_find_package (Qt5 # moved\n"))
    done = _trim(src)
    assert done.returncode == 1
    assert "trimming gz-sim8 to a headless server left" in done.stderr and "Qt5" in done.stderr
