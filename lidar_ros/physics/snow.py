"""Snowfall: the extinction coefficient of falling snow for a near-infrared beam.

From the snowfall rate S (mm/h) with the empirical power law used for optical links (Kaushal & Kaddoum,
"Optical Communication in Space: Challenges and Mitigation Techniques", IEEE Commun. Surveys & Tutorials
19(1), 2017, the snow attenuation of their atmospheric-channel section):

    α_dB = a·S^b  (dB/km),   dry snow: a = 5.42·10⁻⁵·λ + 5.4958776, b = 1.38
                             wet snow: a = 1.023·10⁻⁴·λ + 3.7855466, b = 0.72      (λ in nm)

converted to natural units α = α_dB·ln(10)/10 / 1000 (1/m). Worked number: dry snow, 905 nm, 5 mm/h:
a = 5.545, α_dB = 5.545·5^1.38 = 51.2 dB/km, α = 0.0118 /m, so a wall at 50 m keeps exp(−2·0.0118·50) =
31 % of its return. Or from the visibility V in snow (meteorological optical range, Koschmieder):
α = 3.912 / V; snowflakes are far larger than the wavelength, so no wavelength exponent (Kim et al.'s
q = 0 regime). The weather module sums α with fog and rain and applies the two-way Beer–Lambert loss and
the particle returns (weather.py).
"""
from __future__ import annotations

import math

KOSCHMIEDER = 3.912  # −ln(0.02)
SNOW_TYPES = ("dry", "wet")
_COEFFICIENTS = {"dry": (5.42e-5, 5.4958776, 1.38), "wet": (1.023e-4, 3.7855466, 0.72)}  # (a slope, a offset, b)
DB_PER_NEPER = 10.0 / math.log(10.0)  # 4.343 dB per unit of natural (1/e) attenuation


def snow_extinction_per_m(rate_mm_h: float, snow_type: str, wavelength_nm: float) -> float:
    """α (1/m) of snow falling at `rate_mm_h`; 0 for no snow."""
    if rate_mm_h <= 0:
        return 0.0
    slope, offset, b = _COEFFICIENTS[snow_type]
    alpha_db_per_km = (slope * wavelength_nm + offset) * rate_mm_h**b
    return alpha_db_per_km / DB_PER_NEPER / 1000.0


def snow_visibility_extinction_per_m(visibility_km: float) -> float:
    """α (1/m) of snow that limits the visibility to `visibility_km`; 0 for none."""
    return KOSCHMIEDER / (visibility_km * 1000.0) if visibility_km > 0 else 0.0
