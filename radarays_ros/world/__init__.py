"""World layer: SDF/URDF/mesh files + materials -> Scene (entities with meshes, poses, static flags).

Entry point: `radarays_ros.world.loader.load_world(path, ...)`; see that module for the public API.
(This file makes `radarays_ros.world` a regular package, so `pip install .` installs it.)
"""
