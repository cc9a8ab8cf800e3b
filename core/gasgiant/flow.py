"""The flow map's fixed scale and its 8-bit encoding (east and north velocity in radians per frame)."""

from __future__ import annotations

import math

import numpy as np

from .params import GasGiantParams


FLOW_NOISE_PEAK = 3.5  # the turbulence is normalised to RMS 1; measured peaks are about 3 to 4.5
FLOW_VORTEX_PEAK = math.sqrt(2.0) * math.exp(-0.5)  # peak speed of one vortex per unit strength (~0.86)


def flow_scale(params: GasGiantParams) -> float:
    """The fixed speed (radians per frame) that the 8-bit flow map's 0 and 1 stand for: ``params.flow_scale``, or
    when that is 0 a bound from the settings alone (the same for every frame of a sequence): velocity factor x
    iterations per frame x (the fastest band speed + ``FLOW_NOISE_PEAK`` x turbulence + up to two overlapping
    vortices' peak speed). Real fields stay below it almost everywhere; faster texels clamp in the PNG."""
    if params.flow_scale > 0:
        return float(params.flow_scale)
    rel = (abs(params.band_speed) + FLOW_NOISE_PEAK * abs(params.noise_speed)
           + min(params.vortices, 2) * FLOW_VORTEX_PEAK * abs(params.vortex_strength))
    scale = rel * math.radians(params.velocity_factor) / 20.0 * params.frame_iterations
    return scale if scale > 0 else 1.0


def encode_flow(velocity: np.ndarray, scale: float) -> np.ndarray:
    """Real flow (east, north, speed in radians per frame) -> 0..1 pixels: R, G = 0.5 + 0.5 v / scale, B = speed /
    scale, all clamped to 0..1 (what the 8-bit PNG stores)."""
    v = np.asarray(velocity, dtype=np.float32)
    k = np.float32(1.0 / scale)
    out = np.empty_like(v)
    out[..., :2] = np.float32(0.5) + np.float32(0.5) * k * v[..., :2]
    out[..., 2] = k * v[..., 2]
    return np.clip(out, 0.0, 1.0, out=out)


def decode_flow(pixels: np.ndarray, scale: float) -> np.ndarray:
    """0..1 flow pixels -> (east, north, speed) in radians per frame: the formula gasgiant.json states."""
    px = np.asarray(pixels, dtype=np.float64)
    out = np.empty(px.shape[:-1] + (3,))
    out[..., :2] = (2.0 * px[..., :2] - 1.0) * scale
    out[..., 2] = px[..., 2] * scale
    return out
