"""Sensor feature tests on every frame path (imported by test modules): the `frames` fixture runs a test
once with host frames and once with device frames on Warp's CPU device, as trimesh runs each ray test
for every backend; `lidar_on(frames, ...)` makes the simulator of that path.

    def test_something(frames):
        scan = lidar_on(frames, cfg, scene, backend).simulate(pose)

Host frames use the backend the test made (Embree); device frames a warp backend on the same scene
(one per scene, kept while the scene lives). The device path is skipped where Warp is not installed
(and fails under CI=true, test_warp_support.require_warp). A test whose config the device refuses
(lidar_ros/warp_frame.DEVICE_SUPPORT) is a host-only feature and should not take the fixture.
"""
import weakref

import pytest

FRAMES = ("host", "device")
_WARP_BACKENDS: dict = {}  # id(scene) -> (weak reference to the scene, its warp backend)


@pytest.fixture(params=FRAMES)
def frames(request) -> str:
    if request.param == "device":
        from support.warp import require_warp

        require_warp()
    return request.param


def warp_backend_of(scene):
    """A warp backend on Warp's CPU device for `scene`, one per scene."""
    ref, backend = _WARP_BACKENDS.get(id(scene), (None, None))
    if ref is None or ref() is not scene:
        from radarays_ros.tracing import make_backend

        backend = make_backend("warp", scene, device="cpu")
        _WARP_BACKENDS[id(scene)] = (weakref.ref(scene, lambda _, key=id(scene): _WARP_BACKENDS.pop(key, None)), backend)
    return backend


def lidar_on(frames: str, config, scene, backend, **kwargs):
    """LidarSimulator (host frames, over `backend`) or WarpLidarSimulator (device frames, Warp's CPU device)."""
    if frames == "device":
        from lidar_ros.warp_frame import WarpLidarSimulator

        return WarpLidarSimulator(config, scene, warp_backend_of(scene), **kwargs)
    from lidar_ros import LidarSimulator

    return LidarSimulator(config, scene, backend, **kwargs)


def radar_on(frames: str, config, scene, backend, **kwargs):
    """RadarSimulator (host frames, over `backend`) or WarpRadarSimulator (device frames, Warp's CPU device)."""
    if frames == "device":
        from radarays_ros.radar.warp_frame import WarpRadarSimulator

        return WarpRadarSimulator(config, scene, warp_backend_of(scene), **kwargs)
    from radarays_ros.radar.simulator import RadarSimulator

    return RadarSimulator(config, scene, backend=backend, **kwargs)
