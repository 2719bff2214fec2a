"""When a sweep runs: a pure function of the clock, the sensor period and the last sweep done.

Sweeps start on a grid of whole periods of the clock (as PPS-synchronised sensors do). The timer that
calls `next_sweep` ticks twice per period; a sweep is simulated once its grid slot is complete, so timer
jitter neither repeats nor skips a sweep, and slots passed while a frame was still being simulated
count as dropped. Time going back (a bag or a simulator restarted) starts the grid again.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sweep:
    """The sweep to simulate now: it covers [t0_ns, t0_ns + period) and completes grid slot `slot`."""

    slot: int
    t0_ns: int
    dropped: int = 0  # complete slots skipped since the last sweep (the simulation was slower than the rate)
    time_went_back: bool = False  # the clock jumped back: motion remembered from before is stale


def next_sweep(now_ns: int, period_ns: int, last_slot: int | None) -> Sweep | None:
    """The sweep due at `now_ns`, or None: no clock yet (now <= 0) or this slot's sweep already ran."""
    if now_ns <= 0 or period_ns <= 0:
        return None
    slot = now_ns // period_ns  # sweeps [slot - 1, slot) * period are complete
    dropped, went_back = 0, False
    if last_slot is not None:
        if slot == last_slot:
            return None
        if slot < last_slot:
            went_back = True
        else:
            dropped = int(slot - last_slot - 1)
    return Sweep(int(slot), int((slot - 1) * period_ns), dropped, went_back)
