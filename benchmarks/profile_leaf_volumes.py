"""Where the OS1-128 realistic frame's leaf-volume work goes: cProfile of 10 frames on one thread (bench_lidar's world
and pose), the cumulative ms per frame of trace_lidar and its parts (foliage.volume on in the realistic profile).

Run: PYTHONPATH=$PWD .venv/bin/python -m benchmarks.profile_leaf_volumes
"""
import cProfile, pstats, io
from benchmarks.bench_lidar import _config
from benchmarks.common import make_big_world
from lidar_ros import LidarSimulator
from radarays_ros.io.lidar_clouds import FrameCloud
from radarays_ros.tracing import make_backend
from radarays_ros.world.transforms import pose_to_matrix
scene = make_big_world(1_000_000)
pose = pose_to_matrix(0.0, 0.0, 1.8, 0.0, 0.0, 0.3)
backend = make_backend("embree", scene, threads=1)
sim = LidarSimulator(_config("OS1-128+realistic"), scene, backend, seed=0, sink=FrameCloud.of)
sim.simulate(pose).release()
p = cProfile.Profile(); p.enable()
for _ in range(10): sim.simulate(pose).release()
p.disable()
st = pstats.Stats(p).stats
def cum(tag): return sum(v[3] for k, v in st.items() if tag in f"{k[0]}:{k[2]}") / 10 * 1e3
print(f"per frame: trace_lidar {cum('interaction.py:trace_lidar'):.2f} ms, first_trace {cum('interaction.py:first_trace'):.2f}, "
      f"_first_surface_returns {cum('_first_surface_returns'):.2f}, _follow {cum('interaction.py:_follow'):.2f}, "
      f"_meet_leaves {cum('_meet_leaves'):.2f}, echo normals {cum('_echo_normals'):.2f}, frame {cum('simulator.py:simulate'):.2f}")
