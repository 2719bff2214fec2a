"""The physical radar sensor stage (the second of the radar's two stages: geometry, then sensor).

Used when `sensor.model: physical` (realistic presets); the RadaRays-compatible stage is untouched.
One formula per module, each with its source:

    antenna.py         two-way antenna pattern, azimuth x elevation (sinc / Gaussian, cosec^2)
    beam_sampling.py   stratified importance sampling over the pattern, redrawn per azimuth and frame
    radar_equation.py  P_r = P_t G^2 lambda^2 sigma / ((4 pi)^3 R^4 L)
    backscatter.py     sigma0(theta) tables per material class (77 GHz)
    roughness.py       coherent (specular) reflectivity |Gamma|^2 exp(-(4 pi h cos(theta) / lambda)^2)
    facet_po.py        PO RCS of a flat polygon: 4 pi |cos(theta) I(p)|^2 / lambda^2, Fresnel-zone limit
    curved_rcs.py      curved surfaces at their specular point: pi r1 r2, 2 pi a b^2 / lambda
    corner_rcs.py      dihedral and trihedral corners by their effective area
    scatterers.py      a mesh read into plates, curved surfaces and corners (once per scene)
    facet_glints.py    the coherent returns of one frame, per scatterer and azimuth (no ray sampling)
    geometry.py        rays, mirror bounces, clutter samples and glints of one frame
    speckle.py         circular complex Gaussian clutter, correlated between azimuths by beam overlap
    range_response.py  FMCW range FFT window response in metres
    thermal_noise.py   N = k T F / T_chirp per range bin
    stc.py             sensitivity-time control
    phase_noise.py     the Tx-Rx leakage's residual phase-noise skirt (Leeson, range correlation)
    if_filters.py      IF high-pass (range compensation) and anti-alias low-pass as gains over range
    clipping.py        ADC clipping of a beat tone: compression and distortion over the range line (spokes)
    interference.py    another FMCW radar: Friis one way, chirp crossings as bursts over the range line (spokes)
    interferers.py     where the other radars stand: fixed, on a scene entity (moving with it) or on our rig
    receiver_chain.py  the order of the chain: skirt -> filters -> thermal noise -> ADC -> detector
    detector.py        log detector in Navtech counts (0.5 dB per count, 8 bits; integer FFT power)
    doppler.py         range-Doppler coupling of FMCW chirps
    motion.py          rigid-body velocities (v_o + omega x (p - o)) of the sensor and moving entities
    stage.py           the sensor stage: fields -> range response -> receiver -> counts
    simulate.py        one frame: geometry then the sensor stage, into a RadarImage

Beside it: radar/cfar.py (CA/OS-CFAR) and radar/compare/ (`radarays compare` statistics and command).
"""
