"""The velocity field: counter-rotating bands plus the surface curl of a stream function (fractal 4D simplex
noise and Gaussian vortices), evaluated on a padded cube map and stored in each face's chart coordinates."""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .. import jobs
from .cube import _FACE_A, _FACE_B, _FACE_N, face_directions, sample_cube
from .noise import _perm, simplex4_grad
from .params import GasGiantParams


POLE_TAPER_DEG = 3.0


def to_band_frame(p: np.ndarray, params: GasGiantParams) -> np.ndarray:
    """Directions in the bands' frame, whose Z is the band axis: the planet's Z, or X with vertical bands
    (a cyclic permutation of the axes: a rotation, so lengths, angles and divergence are kept)."""
    return p[..., [1, 2, 0]] if params.vertical_bands else p


def from_band_frame(q: np.ndarray, params: GasGiantParams) -> np.ndarray:
    return q[..., [2, 0, 1]] if params.vertical_bands else q


def band_latitude(p: np.ndarray, params: GasGiantParams) -> np.ndarray:
    """Latitude (radians) of unit directions measured from the bands' equator."""
    return np.arcsin(np.clip(to_band_frame(np.asarray(p, dtype=np.float64), params)[..., 2], -1.0, 1.0))


def band_profile(lat: npt.ArrayLike, params: GasGiantParams) -> npt.NDArray[np.float64]:
    """Eastward band speed (relative units) at latitude ``lat`` (radians)."""
    lat = np.asarray(lat, dtype=np.float64)
    c = np.cos(lat * params.bands)
    speed = params.band_speed * ((1.0 - params.pole_attenuation) + params.pole_attenuation * np.cos(lat))
    speed = speed * np.sign(c) * np.abs(c) ** params.band_power
    taper = np.clip((math.pi / 2 - np.abs(lat)) / math.radians(POLE_TAPER_DEG), 0.0, 1.0)
    return speed * (3 * taper ** 2 - 2 * taper ** 3)


def vortex_set(params: GasGiantParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centres (V, 3), radii (V,), signed strengths (V,)) of the vortices: at random places (uniform over the
    sphere up to 75 degrees of band latitude) where the relative band speed |band(lat)| / max |band| is at most
    ``vortex_band_threshold`` (gaseous-giganticus --vortex-band-threshold: between the bands, not in their
    fast middles; 1 = anywhere). Should too few places qualify, the slowest of the candidates are used."""
    nv = params.vortices
    if nv == 0:
        return np.zeros((0, 3)), np.zeros(0), np.zeros(0)
    rng = np.random.default_rng([params.seed & 0xFFFFFFFF, 0x7057])
    zmax = math.sin(math.radians(75))
    cand = np.arcsin(rng.uniform(-zmax, zmax, max(256, 64 * nv)))
    speed = np.abs(band_profile(cand, params))
    top = float(np.abs(band_profile(np.linspace(-1.4, 1.4, 2001), params)).max())
    rel = speed / top if top > 0 else np.zeros_like(speed)
    key = np.where(rel <= params.vortex_band_threshold, 0.0, rel)  # qualifying places first, in random order
    lat = cand[np.argsort(key, kind="stable")[:nv]]
    lon = rng.uniform(-math.pi, math.pi, nv)
    centres = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)
    centres = from_band_frame(centres, params)  # placed between the bands, wherever their axis points
    radii = params.vortex_size + rng.random(nv) * rng.random(nv) * params.vortex_size_variance
    # turn with the local shear of the bands (d band / d lat) so the vortices sit naturally between them
    h = 1e-4
    shear = (band_profile(lat + h, params) - band_profile(lat - h, params)) / (2 * h)
    sign = np.where(shear >= 0, 1.0, -1.0)
    return centres, radii, sign * params.vortex_strength


def _psi_grad(p: np.ndarray, params: GasGiantParams, time: float, perm: np.ndarray,
              vort) -> tuple[np.ndarray, np.ndarray]:
    """3D gradient of the stream function's noise part and vortex part at unit directions p (n, 3)."""
    gnoise = np.zeros_like(p)
    w = params.w_offset + time
    for o in range(params.octaves):
        freq = params.noise_scale * 2.0 ** o
        amp = 1.0 if o == 0 else params.falloff ** ((o) * params.gain)
        q = p * freq
        _, gx, gy, gz = simplex4_grad(q[:, 0], q[:, 1], q[:, 2], np.full(len(p), w + 17.0 * o), perm)
        gnoise += (amp * freq) * np.stack([gx, gy, gz], axis=-1)
    gvort = np.zeros_like(p)
    centres, radii, strengths = vort
    for c, r, s in zip(centres, radii, strengths, strict=True):  # a few vortices, each vectorised over all points
        dvec = p - c
        e = np.exp(-np.einsum("ij,ij->i", dvec, dvec) / (r * r))
        # psi_v = s * r * exp(-d^2/r^2)  ->  peak speed ~ s, independent of the radius
        gvort += (-2.0 * s / r * e)[:, None] * dvec
    return gnoise, gvort


def _velocity_raw(p, params, time, perm, vort):
    """Band part and curl parts (unscaled) of the 3D velocity at unit directions p (n, 3)."""
    gnoise, gvort = _psi_grad(p, params, time, perm, vort)
    q = to_band_frame(p, params)
    lat = np.arcsin(np.clip(q[:, 2], -1.0, 1.0))
    east = np.stack([-q[:, 1], q[:, 0], np.zeros(len(q))], axis=-1)
    norm = np.linalg.norm(east, axis=-1, keepdims=True)
    east = np.divide(east, norm, out=np.zeros_like(east), where=norm > 1e-12)
    band = from_band_frame(band_profile(lat, params)[:, None] * east, params)
    return band, np.cross(p, gnoise), np.cross(p, gvort)


@dataclass
class Field:
    """A velocity field on a padded cube map."""

    size: int
    velocity: np.ndarray  # (6, size+2, size+2, 3) float32, radians per iteration, tangent
    chart: np.ndarray  # (6 * (size+2)^2,) complex64 du + i dv (per iteration, face-chart units) of each texel
    noise_norm: float  # scale that brought the noise part to unit RMS (kept across frames)


def _noise_norm(params, perm, vort):
    """1 / RMS of the noise curl over a fixed set of sphere points at time 0 (keeps frames consistent)."""
    rng = np.random.default_rng([params.seed & 0xFFFFFFFF, 0x4E4F])
    p = rng.normal(size=(4096, 3))
    p /= np.linalg.norm(p, axis=-1, keepdims=True)
    _, curl, _ = _velocity_raw(p, params, 0.0, perm, vort)
    rms = float(np.sqrt(np.mean(np.sum(curl ** 2, axis=-1))))
    return 1.0 / rms if rms > 0 else 0.0


def velocity_at(p: np.ndarray, params: GasGiantParams, time: float = 0.0) -> np.ndarray:
    """Analytic 3D velocity (radians per iteration) at unit directions p (n, 3): the field's exact twin."""
    perm = _perm(params.seed)
    vort = vortex_set(params)
    norm = _noise_norm(params, perm, vort)
    return _scaled_velocity(np.asarray(p, dtype=np.float64), params, time, perm, vort, norm)


def _scaled_velocity(p, params, time, perm, vort, norm):
    band, curl, cvort = _velocity_raw(p, params, time, perm, vort)
    k = math.radians(params.velocity_factor) / 20.0
    return k * (band + params.noise_speed * norm * curl + cvort)


def build_field(params: GasGiantParams, time: float = 0.0, noise_norm: float | None = None) -> Field:
    """The velocity field at noise time ``time`` on a padded cube map of ``params.field_size``."""
    return jobs.finish(build_field_steps(params, time, noise_norm))


def _field_blocks(n: int):
    """(face, first row, end row) of the padded faces in blocks of about 32768 texels (bounded memory)."""
    rows = max(1, (1 << 15) // (n + 2))
    return [(f, a, min(n + 2, a + rows)) for f in range(6) for a in range(0, n + 2, rows)]


def _chart_block(vel: np.ndarray, d: np.ndarray, f: int) -> np.ndarray:
    """Chart velocities du + i dv (complex64) of float32 3D velocities ``vel`` (m, 3) at directions ``d`` (m, 3) of
    face ``f``: u = p.a / p.n, so du = (V.a (p.n) - (p.a)(V.n)) / (p.n)^2 (the face axes are unit axes: the dot
    products are exact)."""
    v64 = vel.astype(np.float64)
    pn = d @ _FACE_N[f]
    vn = v64 @ _FACE_N[f]
    pn2 = pn * pn
    du = (v64 @ _FACE_A[f] * pn - d @ _FACE_A[f] * vn) / pn2
    dv = (v64 @ _FACE_B[f] * pn - d @ _FACE_B[f] * vn) / pn2
    out = np.empty(len(d), dtype=np.complex64)
    out.real = du
    out.imag = dv
    return out


def _new_field(n: int, noise_norm: float, vel: np.ndarray | None = None) -> Field:
    w = n + 2
    if vel is None:
        vel = np.empty((6, w, w, 3), dtype=np.float32)
    return Field(n, vel, np.empty(6 * w * w, dtype=np.complex64), noise_norm)


def build_field_steps(params: GasGiantParams, time: float = 0.0, noise_norm: float | None = None
                      ) -> Generator[float, None, Field]:
    """``build_field`` as a job: yields its progress (0..1) between blocks, returns the ``Field``. Each block of
    texels is evaluated, stored as float32 and turned into chart velocities on its own (numpy releases the GIL:
    blocks run on threads), so the memory is the field's own plus a few blocks."""
    n = params.field_size
    perm = _perm(params.seed)
    vort = vortex_set(params)
    if noise_norm is None:
        noise_norm = _noise_norm(params, perm, vort)
    fld = _new_field(n, noise_norm)
    w = n + 2
    chart = fld.chart
    blocks = _field_blocks(n)

    def block(item):
        f, a, b = item
        d = face_directions(n, pad=1, faces=slice(f, f + 1), rows=slice(a, b)).reshape(-1, 3)
        vel = fld.velocity[f, a:b].reshape(-1, 3)
        vel[:] = _scaled_velocity(d, params, time, perm, vort, noise_norm)
        chart[(f * w + a) * w:(f * w + b) * w] = _chart_block(vel, d, f)

    if params.threads > 1:
        # a batch of blocks per step, all done before it yields: no thread runs while the job hands control back
        # to Blender (Blender's Python API is not thread-safe, and a modal bake runs Blender's event loop between
        # steps)
        with ThreadPoolExecutor(params.threads) as pool:
            for k in range(0, len(blocks), params.threads):
                batch = blocks[k:k + params.threads]
                list(pool.map(block, batch))
                yield (k + len(batch)) / len(blocks)
    else:
        for k, item in enumerate(blocks):
            block(item)
            yield (k + 1) / len(blocks)
    return fld


def field_from_velocity(vel: np.ndarray, noise_norm: float, d: np.ndarray | None = None) -> Field:
    """A ``Field`` from its stored float32 3D velocities (6, n+2, n+2, 3): the chart velocities the particles
    read are derived from them (so a field loaded from a file is exactly the one that was built)."""
    n = vel.shape[1] - 2
    w = n + 2
    fld = _new_field(n, noise_norm, np.ascontiguousarray(vel, dtype=np.float32))
    for f, a, b in _field_blocks(n):
        db = (face_directions(n, pad=1, faces=slice(f, f + 1), rows=slice(a, b)) if d is None
              else d[f:f + 1, a:b]).reshape(-1, 3)
        fld.chart[(f * w + a) * w:(f * w + b) * w] = _chart_block(fld.velocity[f, a:b].reshape(-1, 3), db, f)
    return fld


def lerp_field(a: Field, b: Field, t: float, out: Field | None = None) -> Field:
    """The field a + (b - a) t between two fields of one size (animated bakes between two built fields).
    Both are tangent and divergence-free, so every mix of them is too; ``out`` is reused when given."""
    if t <= 0.0:
        return a
    if t >= 1.0:
        return b
    if out is None or out is a or out is b:
        out = Field(a.size, np.empty_like(a.velocity), np.empty_like(a.chart), a.noise_norm)
    w = np.float32(t)
    for name in ("velocity", "chart"):
        x = getattr(a, name).view(np.float32)
        y = getattr(b, name).view(np.float32)
        o = getattr(out, name).view(np.float32)
        np.subtract(y, x, out=o)
        o *= w
        o += x
    return out


def surface_divergence(fn: Callable[[np.ndarray], np.ndarray], p: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """Numerical surface divergence of a tangent field ``fn(points) -> vectors`` at unit points p (n, 3):
    the outward flux through a small circle of angular radius h, over its area (16-point rule)."""
    p = np.asarray(p, dtype=np.float64)
    t1 = np.cross(p, np.where(np.abs(p[:, 2:3]) < 0.9, [[0, 0, 1.0]], [[1.0, 0, 0]]))
    t1 /= np.linalg.norm(t1, axis=-1, keepdims=True)
    t2 = np.cross(p, t1)
    total = np.zeros(len(p))
    m = 16
    for k in range(m):  # quadrature points on the circle
        a = 2 * math.pi * k / m
        out = math.cos(a) * t1 + math.sin(a) * t2
        q = math.cos(h) * p + math.sin(h) * out
        # outward conormal at q: tangent at q, pointing away from p
        nrm = out * math.cos(h) - p * math.sin(h)
        total += np.einsum("ij,ij->i", fn(q), nrm)
    length = 2 * math.pi * math.sin(h)
    area = 2 * math.pi * (1 - math.cos(h))
    return total / m * length / area


def sample_field(fld: Field, p: np.ndarray) -> np.ndarray:
    """Bilinear lookup of the stored 3D velocity at unit directions (what the particles see)."""
    return sample_cube(fld.velocity, p)
