"""Both gz-transport clients against the real gz-transport13 peer (Gazebo Harmonic's library, built by
scripts/setup_gz_harmonic.sh; the peer by scripts/setup_gz_peer.sh), in a private network namespace.

    .venv/bin/python -m benchmarks.bench_gz_clients [--requests 100] [--rate 200]

For each client (ours, "builtin"; the official bindings, "official"; and the official bindings with one
blocking request per call, "official-unsliced", as the upstream API is used by default):
  * scene/info request round trip (median, 95th percentile) with no subscription,
  * the same while the peer streams Pose_V at --rate Hz with 30 moving models to a subscription of this
    process, and how many requests timed out (3 s) - the GIL effect described in radarays_ros/gazebo/client.py,
  * Pose_V messages received per second meanwhile.
Other processes share the 2 cores: compare the clients within one run.
"""
from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))  # the tests' support package

from support import gz_harmonic, gz_netns  # noqa: E402
from support.gz_harness import Peer  # noqa: E402


def measure(kind: str, peer: Peer, requests: int) -> dict:
    import radarays_ros.gazebo.client as client_module

    slice_s = client_module.REQUEST_SLICE_S
    if kind == "official-unsliced":
        client_module.REQUEST_SLICE_S = 1e9
    client = client_module.make_client("official" if kind.startswith("official") else "builtin")
    service = f"/world/{peer.world}/scene/info"
    try:
        try:
            client.request(service, timeout=5)  # discovery and connection
        except TimeoutError:
            pass  # counted below
        quiet = _round_trips(client, service, requests)
        count = [0]
        client.subscribe(f"/world/{peer.world}/pose/info", lambda p, t: count.__setitem__(0, count[0] + 1))
        time.sleep(1.0)
        start, first = time.monotonic(), count[0]
        streaming = _round_trips(client, service, requests)
        received = (count[0] - first) / (time.monotonic() - start)
    finally:
        client.close()
        client_module.REQUEST_SLICE_S = slice_s
    return {"quiet": quiet, "streaming": streaming, "poses_per_s": received}


def _round_trips(client, service: str, n: int) -> dict:
    times, timeouts = [], 0
    for _ in range(n):
        t0 = time.perf_counter()
        try:
            client.request(service, timeout=3.0)
            times.append(time.perf_counter() - t0)
        except TimeoutError:
            timeouts += 1
    ms = np.array(times) * 1000 if times else np.array([np.nan])
    return {"median_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95)), "timeouts": timeouts}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--rate", type=float, default=200.0)
    args = parser.parse_args(argv)
    if not gz_harmonic.stage_complete("transport") or not gz_harmonic.PEER13.exists():
        raise SystemExit(gz_harmonic.missing("transport") + " (and build/gz_peer13 by scripts/setup_gz_peer.sh)")
    gz_netns.ensure_isolated()
    import os

    partition = f"bench_{uuid.uuid4().hex[:8]}"
    os.environ.update(GZ_PARTITION=partition, GZ_IP="127.0.0.1", IGN_PARTITION=partition, IGN_IP="127.0.0.1")
    gz_harmonic.import_bindings()
    peer = Peer(f"w{uuid.uuid4().hex[:8]}", partition, gz_harmonic.PEER13, gz_harmonic.environment()).start()
    try:
        peer.send(f"rate {args.rate:g}")
        peer.send("swarm 30")
        for kind in ("builtin", "official", "official-unsliced"):
            r = measure(kind, peer, args.requests)
            q, s = r["quiet"], r["streaming"]
            print(f"{kind:18s} scene/info quiet {q['median_ms']:.2f} ms (p95 {q['p95_ms']:.2f}), "
                  f"streaming {s['median_ms']:.2f} ms (p95 {s['p95_ms']:.2f}), timeouts {s['timeouts']}/{args.requests}, "
                  f"Pose_V received {r['poses_per_s']:.0f}/s of {args.rate:g}")
    finally:
        peer.stop()


if __name__ == "__main__":
    main()
