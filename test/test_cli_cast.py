"""`radarays cast` as external checks run it: files in, files out, exit status and stderr (radarays_ros.cli.main
in this process; the real process is test_cli_user_errors.py's closed-pipe test)."""
import numpy as np
import pytest
import trimesh

from support.cli import radarays


@pytest.fixture
def wall_stl(tmp_path):
    """A 1 m thick wall with its near face on x = 4; faces written in a known order."""
    box = trimesh.creation.box([1, 6, 6])
    box.apply_translation([4.5, 0, 0])
    path = tmp_path / "wall.stl"
    box.export(path)
    return path, box


def run(*args):
    return radarays(*args)


def test_cast_writes_the_documented_arrays(tmp_path, wall_stl):
    path, box = wall_stl
    yaw = np.radians([0.0, 20.0, -30.0, 180.0])
    origins = np.zeros((4, 3), np.float64)
    directions = np.stack([np.cos(yaw), np.sin(yaw), np.zeros(4)], 1)
    np.savez(tmp_path / "rays.npz", origins=origins, directions=directions)
    result = run("cast", path, "--rays", tmp_path / "rays.npz", "--out", tmp_path / "hits.npz")
    assert result.returncode == 0, result.stderr
    hits = np.load(tmp_path / "hits.npz")
    assert hits["distance"].dtype == np.float32 and hits["entity"].dtype == np.int32
    np.testing.assert_allclose(hits["distance"][:3], 4.0 / np.cos(yaw[:3]), rtol=1e-5)
    assert np.isinf(hits["distance"][3]) and not hits["hit"][3]
    assert hits["entity"][3] == -1 and hits["face"][3] == -1 and hits["material"][3] == -1
    np.testing.assert_allclose(hits["normal"][:3], [[-1, 0, 0]] * 3, atol=1e-6)
    assert list(hits["entity_names"]) == ["wall"]
    # face indices refer to the STL's own triangle order: each hit face lies on the plane x = 4
    for face in hits["face"][:3]:
        np.testing.assert_allclose(box.triangles[face][:, 0], 4.0, atol=1e-6)


def test_cast_bad_rays_file_is_one_line_and_exit_2(tmp_path, wall_stl):
    path, _ = wall_stl
    np.savez(tmp_path / "rays.npz", origins=np.zeros((2, 3)))
    result = run("cast", path, "--rays", tmp_path / "rays.npz", "--out", tmp_path / "hits.npz")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "missing array 'directions'" in result.stderr and "rays.npz" in result.stderr


def test_cast_missing_world_names_the_file(tmp_path):
    np.savez(tmp_path / "rays.npz", origins=np.zeros((1, 3)), directions=np.array([[1.0, 0, 0]]))
    result = run("cast", tmp_path / "nope.sdf", "--rays", tmp_path / "rays.npz", "--out", tmp_path / "hits.npz")
    assert result.returncode == 2 and "nope.sdf" in result.stderr


def test_cast_reports_load_warnings_and_still_writes_misses(tmp_path):
    world = tmp_path / "empty.sdf"
    world.write_text('<sdf version="1.9"><world name="w"></world></sdf>')
    np.savez(tmp_path / "rays.npz", origins=np.zeros((2, 3)), directions=np.eye(3)[:2])
    result = run("cast", world, "--rays", tmp_path / "rays.npz", "--out", tmp_path / "hits.npz")
    assert result.returncode == 0 and "warning:" in result.stderr
    hits = np.load(tmp_path / "hits.npz")
    assert not hits["hit"].any() and np.isinf(hits["distance"]).all()


def test_malformed_material_library_is_one_line_with_line_and_column(tmp_path, wall_stl):
    path, _ = wall_stl
    bad = tmp_path / "bad.yaml"
    bad.write_text("materials:\n  wall: {radar: [1, 2\n")
    np.savez(tmp_path / "rays.npz", origins=np.zeros((1, 3)), directions=np.array([[1.0, 0, 0]]))
    result = run("cast", path, "--rays", tmp_path / "rays.npz", "--out", tmp_path / "hits.npz", "--materials", bad)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "bad.yaml" in result.stderr and "line 3" in result.stderr
