"""One angular axis of a sensor (vertical or horizontal) written in YAML, as an array of angles.

Accepted forms (degrees, the field names say so):
  {angles_deg: [a0, a1, ...]}                      explicit angles, kept in the given order
  {min_deg: -15, max_deg: 15, step_deg: 2}         min, min+step, ... up to max inclusive
  {min_deg: -180, step_deg: 0.2, count: 1800}      count angles from min
  {min_deg: -135, max_deg: 135, samples: 1081}     Gazebo style: samples spread over [min, max]
  {fov_deg: 30, resolution_deg: 2}                 field of view centred on 0: -15, -13, ..., 15
                                                   (a full 360 deg field does not repeat its first angle)
"""
from __future__ import annotations

import numpy as np

from ..physics._validate import fail
from ..spec import SpecReader

FORMS = ("angles_deg | min_deg+max_deg+step_deg | min_deg+step_deg+count | min_deg+max_deg+samples | "
         "fov_deg+resolution_deg")


def read_axis(axis: SpecReader, max_count: int = 100000) -> np.ndarray:
    """Angles of the axis in radians; an ambiguous or incomplete axis names its keys and the forms."""
    keys = {k for k in axis.data if axis.data[k] is not None}
    where = axis.prefix.rstrip(".")
    if keys == {"angles_deg"}:
        angles = np.array(axis.numbers("angles_deg", lo=-360.0, hi=360.0))
    elif keys == {"min_deg", "max_deg", "step_deg"}:
        lo, hi = axis.number("min_deg", lo=-360.0, hi=360.0), axis.number("max_deg", lo=-360.0, hi=360.0)
        step = axis.number("step_deg", lo=0.0, hi=360.0, lo_open=True)
        if hi < lo:
            fail(axis.where("max_deg"), hi, f"below min_deg = {lo:g}", f"[{lo:g}, 360.0]")
        count = int(np.floor((hi - lo) / step + 1e-6)) + 1
        _check_count(count, axis, where, max_count)  # before allocating: step_deg 1e-13 means 10^15 angles
        angles = lo + step * np.arange(count)
    elif keys == {"min_deg", "step_deg", "count"}:
        lo = axis.number("min_deg", lo=-360.0, hi=360.0)
        step = axis.number("step_deg", lo=-360.0, hi=360.0)
        if step == 0:
            fail(axis.where("step_deg"), step, "zero", "a non-zero number of degrees in [-360.0, 360.0]")
        count = axis.number("count", lo=1, hi=max_count, integer=True)
        angles = lo + step * np.arange(count)
    elif keys == {"min_deg", "max_deg", "samples"}:
        lo, hi = axis.number("min_deg", lo=-360.0, hi=360.0), axis.number("max_deg", lo=-360.0, hi=360.0)
        count = axis.number("samples", lo=1, hi=max_count, integer=True)
        if count > 1 and hi <= lo:
            fail(axis.where("max_deg"), hi, f"not above min_deg = {lo:g} with samples > 1", f"({lo:g}, 360.0]")
        angles = np.linspace(lo, hi, count) if count > 1 else np.array([lo])
    elif keys == {"fov_deg", "resolution_deg"}:
        fov = axis.number("fov_deg", lo=0.0, hi=360.0, lo_open=True)
        res = axis.number("resolution_deg", lo=0.0, hi=360.0, lo_open=True)
        steps = fov / res
        if abs(steps - round(steps)) > 1e-6:
            fail(axis.where("resolution_deg"), res, f"does not divide fov_deg = {fov:g}",
                 "fov_deg / resolution_deg a whole number")
        count = int(round(steps)) + (0 if fov == 360.0 else 1)
        _check_count(count, axis, where, max_count)
        angles = -fov / 2 + res * np.arange(count)
    else:
        fail(f"{axis.origin}: {where}", sorted(keys), "not a form of an axis", f"forms {FORMS}")
    _check_count(len(angles), axis, where, max_count)
    return np.radians(angles)


def _check_count(count: int, axis: SpecReader, where: str, max_count: int) -> None:
    if count > max_count:
        fail(f"{axis.origin}: {where}", count, "too many angles", f"at most {max_count}")
