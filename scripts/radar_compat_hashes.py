"""Print the sha256 (first 16 hex) of RadaRays-compatible radar frames, to check a change keeps them bit for bit.

    python scripts/radar_compat_hashes.py            # street and office, the three compatible presets

Frames: pose 0 0 0.8 0 0 0, t = 1 s, Embree; the hash covers image (uint8) and image_f32 bytes. The values of
main when the compatible mode was last checked against RadaRays (session notes) are printed beside them.
The bytes depend on the machine (its CPU's vector instructions change float rounding in Embree and numpy):
the same commit (7c02f9e) gives the first set on the machines of earlier sessions and the second on an AMD
EPYC without AVX-512 (2026-11-29). A change must keep the value of the machine it runs on.
"""
import hashlib

import numpy as np

from radarays_ros.radar.config import resolve_radar_config
from radarays_ros.sensors.units import RadarUnit
from radarays_ros.tracing import make_backend
from radarays_ros.world.loader import load_world
from radarays_ros.world.transforms import parse_pose_string

KNOWN = {  # (earlier machines, AMD EPYC without AVX-512)
    ("street", "radarays_default"): ("bc3e445597b580e9", "65ec65c124cc8cb6"),
    ("street", "mulran"): ("7be2678614e229ea", "097379ef45207998"),
    ("street", "navtech_cir204"): ("abc45f1ab82c0584", "ac9a3779cc281e5d"),
    ("office", "radarays_default"): ("e4488dc4f5ba0465", "8181cca93f04fe39"),
    ("office", "mulran"): ("e56b6a9603b85a91", "62902e61660599c5"),
    ("office", "navtech_cir204"): ("04718df56adc7557", "a1c0d1ea191b0aba"),
}


def main() -> int:
    changed = 0
    for world in ("street", "office"):
        scene = load_world(f"radarays_ros/data/worlds/{world}.sdf")
        backend = make_backend("embree", scene)
        for preset in ("radarays_default", "mulran", "navtech_cir204"):
            unit = RadarUnit("", scene, backend, config=resolve_radar_config(preset), frame_id="radar")
            image = unit.simulate(parse_pose_string("0 0 0.8 0 0 0"), 10**9)
            digest = hashlib.sha256(image.image.tobytes() + np.asarray(image.image_f32, np.float32).tobytes())
            value, known = digest.hexdigest()[:16], KNOWN[(world, preset)]
            changed += value not in known
            print(f"{world:7s} {preset:17s} {value} {'same' if value in known else 'CHANGED from ' + ' or '.join(known)}")
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
