"""Particles on the sphere painting a cube map (``Simulation``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ..png import to_uint8
from .cube import (_border_index, _ring, dir_to_face_uv, equirect_directions, equirect_from_cube, face_directions,
                   face_uv_to_dir, sample_cube)
from .field import Field, build_field
from .flow import encode_flow, flow_scale
from .noise import _perm, simplex4_grad
from .palette import colors_at
from .params import CHUNK, WAVE, GasGiantParams, item_chunks

_T = TypeVar("_T")


HOT_PINK = (1.0, 0.07843, 0.57647)  # gaseous-giganticus -h: unpainted texels fade to this, showing divergences
SORT_INTERVAL = 32  # steps between sorting particles by cube cell (fixed: part of the result); 0 = never
SORT_CELLS = 64  # cells per cube face side for that sort (6 * 64 * 64 < 2**16)
TEXEL_MAX = 65535  # the texture's uint16 value for 1.0
BLUR_ROWS = 64  # rows of a face per work item of the blur and fade pass


def _merge_chunks(chunks: list, most: int) -> list:
    """``(batch, start, end)`` ranges of up to ``most`` consecutive ``chunks`` of one batch each."""
    out: list = []
    for b, s, e in chunks:
        if out and out[-1][0] == b and out[-1][3] < most and out[-1][2] == s:
            out[-1] = (b, out[-1][1], e, out[-1][3] + 1)
        else:
            out.append((b, s, e, 1))
    return [(b, s, e) for b, s, e, _ in out]


class Simulation:
    """Particles on the sphere painting a cube map. ``step(k)`` runs k iterations.

    Per particle: ``uv`` complex64 (u + i v in its face's chart), ``face`` int8 and ``col`` uint16 RGBA in the
    texture's units (0..``TEXEL_MAX`` for 0..1), 17 bytes in all. The texture ``image`` is (6 res^2, 4) uint16 RGBA
    (8 bytes a texel: one 64-bit gather and scatter per particle, half the memory of float32; its steps of 1/65535
    are 1/257 of an 8-bit output level). Every ``SORT_INTERVAL`` steps each batch is sorted by cube cell so that the
    gathers from the field and the texture walk memory in order (several times faster than random order).
    """

    def __init__(self, params: GasGiantParams, time: float = 0.0, field: Field | None = None):
        self.params = params.validate()
        p = params
        self.n = p.particles
        self.iteration = 0
        self.time = time
        self._pool = ThreadPoolExecutor(p.threads) if p.threads > 1 else None
        r = self.res = p.cubemap_size
        self.fsize = p.field_size
        # the texture's start colours are independent of the field: painted on a worker while the field is built
        self.image = np.empty((6 * r * r, 4), dtype=np.uint16)
        self.base = None
        fade_base = p.fade_to_palette and not (p.cloud_mode or p.hot_pink)
        if fade_base:
            self.base = np.empty((6 * r * r, 3), dtype=np.uint16)
        sums = np.zeros((6, 3))
        if p.cloud_mode:
            # clouds: the texture holds the painted brightness, starting (and fading back to) empty = transparent
            self.image[:] = 0
            started = None
        elif self._pool is not None and field is None:
            started = [self._pool.submit(self._start_face, f, sums) for f in range(6)]
        else:
            started = None
            self.map(lambda f: self._start_face(f, sums), list(range(6)))
        self.field = field if field is not None else build_field(p, time)
        if started is not None:
            for job in started:
                job.result()
        self.uv = np.empty(self.n, dtype=np.complex64)
        self.face = np.empty(self.n, dtype=np.int8)
        self.col = np.empty((self.n, 4), dtype=np.uint16)
        self.batches = self._batch_ranges()
        self._coarse = None  # cloud mode: the noise mask on a coarse padded cube
        for b, (s, e) in enumerate(self.batches):
            self._spawn(b, s, e, generation=0)
        self.chunks = self._chunk_ranges()
        # waves: fixed groups of chunks that read the texture, then write it back in order
        self.waves = [self.chunks[i:i + WAVE] for i in range(0, len(self.chunks), WAVE)]
        # what a thread moves in one call: consecutive chunks of a wave and a batch (the same result as chunk by
        # chunk: a wave reads the texture before it writes it back)
        self.items = [_merge_chunks(w, item_chunks(p.threads)) for w in self.waves]
        wave_n = max(w[-1][2] - w[0][1] for w in self.waves)
        self._pidx = np.empty(wave_n, dtype=np.intp)
        self._vals = np.empty(wave_n, dtype=np.uint64)  # one texel (4 x uint16) per particle
        self._image64 = self.image.view(np.uint64).reshape(-1)
        self._border = _border_index(r)
        if p.cloud_mode:
            self.centre = np.zeros(3, dtype=np.float32)
        elif p.hot_pink:
            self.centre = np.array(HOT_PINK, dtype=np.float32)
        else:
            self.centre = (sums.sum(axis=0) / (6 * r * r * TEXEL_MAX)).astype(np.float32)

    def _start_face(self, f: int, sums: np.ndarray):
        """Fill face ``f`` of the texture with the palette colours of its texels (rows in blocks: bounded memory);
        add its colour sum to ``sums[f]`` (the centre colour is their mean)."""
        r = self.res
        rows = max(1, (1 << 17) // r)
        for r0 in range(0, r, rows):
            r1 = min(r, r0 + rows)
            d = face_directions(r, faces=slice(f, f + 1), rows=slice(r0, r1)).reshape(-1, 3)
            c = colors_at(d, self.params)
            del d
            sums[f] += c.sum(axis=0, dtype=np.float64) * TEXEL_MAX
            c *= np.float32(TEXEL_MAX)
            c += np.float32(0.5)
            sl = slice(f * r * r + r0 * r, f * r * r + r1 * r)
            np.copyto(self.image[sl, :3], c, casting="unsafe")  # rounded (all values >= 0)
            self.image[sl, 3] = TEXEL_MAX
            if self.base is not None:
                self.base[sl] = self.image[sl, :3]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- particle bookkeeping
    def _batch_ranges(self):
        nb = min(self.params.respawn_batches, self.n) if self.params.lifetime > 0 else 1
        edges = np.linspace(0, self.n, nb + 1).astype(np.int64)
        return [(int(edges[i]), int(edges[i + 1])) for i in range(nb)]

    def _chunk_ranges(self):
        out = []
        for b, (s, e) in enumerate(self.batches):
            for c in range(s, e, CHUNK):
                out.append((b, c, min(e, c + CHUNK)))
        return out

    def _spawn(self, batch, s, e, generation):
        """Place particles s..e (of ``batch``) at random and give them their colours: in blocks of ``CHUNK``, each
        with its own random stream (seed, batch, generation, block), a few blocks per call on the worker threads."""
        if self.params.cloud_mode and self._coarse is None:
            self.cloud_mask_at(np.array([[0.0, 0.0, 1.0]]))  # built once, before the threads read it
        step = CHUNK * item_chunks(self.params.threads)  # a few blocks per call (as the move's work items)
        self.map(lambda s0: self._spawn_block(batch, s, s0, min(e, s0 + step), generation), list(range(s, e, step)))

    def _spawn_block(self, batch, s, s0, e0, generation):
        d = np.empty((e0 - s0, 3))
        for a in range(s0, e0, CHUNK):
            rng = np.random.default_rng([self.params.seed & 0xFFFFFFFF, batch, generation, (a - s) // CHUNK])
            rng.standard_normal((min(e0, a + CHUNK) - a, 3), out=d[a - s0:min(e0, a + CHUNK) - s0])
        d /= np.linalg.norm(d, axis=-1, keepdims=True)
        face, u, v = dir_to_face_uv(d)
        self.uv[s0:e0] = (u + 1j * v).astype(np.complex64)
        self.face[s0:e0] = face
        c = colors_at(d, self.params)
        if self.params.cloud_mode:  # each particle carries its cloud density, so the clouds swirl with the flow
            c *= self.cloud_mask_at(d)[:, None]
        c *= np.float32(TEXEL_MAX)
        c += np.float32(0.5)
        np.copyto(self.col[s0:e0, :3], c, casting="unsafe")  # rounded (all values >= 0)
        self.col[s0:e0, 3] = TEXEL_MAX

    def batch_age(self, batch: int, iteration: int | None = None) -> int:
        L = self.params.lifetime
        it = self.iteration if iteration is None else iteration
        return (it + batch * L // len(self.batches)) % L

    def opacity_now(self) -> float:
        """The particles' opacity at this iteration: ``opacity``, or with ``opacity_start`` above it, that start
        shrinking by 5% per iteration down to ``opacity`` (gaseous-giganticus -O: a strong first coat)."""
        p = self.params
        return max(p.opacity, p.opacity_start * 0.95 ** self.iteration)

    def batch_alpha(self, batch: int) -> float:
        p = self.params
        if p.lifetime <= 0:
            return self.opacity_now()
        x = (self.batch_age(batch) + 0.5) / p.lifetime
        a = 1.0
        if p.fade_in > 0:
            a = min(a, x / p.fade_in)
        if p.fade_out > 0:
            a = min(a, (1.0 - x) / p.fade_out)
        return self.opacity_now() * max(0.0, min(1.0, a))

    def set_time(self, time: float, field: Field | None = None) -> None:
        """Move the noise's 4th dimension and rebuild the field (keeps the noise normalisation); ``field``:
        one already built with ``build_field_steps(params, time, sim.field.noise_norm)``."""
        self.time = time
        self.field = field if field is not None else build_field(self.params, time, self.field.noise_norm)

    # -- one step of one chunk: move, then read the texel under the particle and blend (no texture writes)
    def _move_chunk(self, s, e, o, alpha):
        uv = self.uv[s:e]
        face = self.face[s:e]
        n = self.fsize
        w = n + 2
        half = np.float32(0.5 * n)
        x = uv.real * half
        x += half + np.float32(0.5)
        y = uv.imag * half
        y += half + np.float32(0.5)
        fx = np.floor(x)
        fy = np.floor(y)
        x -= fx
        y -= fy
        fy *= np.float32(w)
        fy += fx  # row * w + column: whole numbers below 2**24, exact in float32
        b = np.multiply(face, w * w, dtype=np.intp)
        b += fy.astype(np.intp)
        chart = self.field.chart  # "clip" below: every index is in range (cheaper than numpy's check and copy)
        c00 = chart.take(b, mode="clip")
        b += 1
        c01 = chart.take(b, mode="clip")
        b += w
        c11 = chart.take(b, mode="clip")
        b -= 1
        c10 = chart.take(b, mode="clip")
        xc = x.astype(np.complex64)  # complex times complex on contiguous arrays: faster than times float32
        yc = y.astype(np.complex64)
        d = c01
        d -= c00
        d *= xc
        d += c00  # top row
        g = c11
        g -= c10
        g *= xc
        g += c10  # bottom row
        g -= d
        g *= yc
        d += g
        uv += d
        del x, y, fx, fy, b, c00, c01, c10, c11, xc, yc, d, g  # a work item's scratch: only what is still needed
        # particles that left their face: re-project onto the face they are over now
        m = np.abs(uv.view(np.float32))
        m = m > np.float32(1.0)  # u and v of each particle side by side: any of the two is a non-zero 16-bit pair
        out = np.flatnonzero(m.view(np.uint16))
        del m
        if out.size:
            u = uv.real
            v = uv.imag
            dirs = face_uv_to_dir(face[out], u[out].astype(np.float64), v[out].astype(np.float64))
            f2, u2, v2 = dir_to_face_uv(dirs)
            uv[out] = (np.clip(u2, -1.0, 1.0) + 1j * np.clip(v2, -1.0, 1.0)).astype(np.complex64)
            face[out] = f2
        # paint: the texel under each particle, blended toward the particle colour (in float32, rounded back)
        idx = self._pidx[s - o:e - o]
        self._texel_index(uv, face, out=idx)
        raw = self._vals[s - o:e - o]
        self._image64.take(idx, out=raw, mode="clip")
        texels = raw.view(np.uint16).reshape(-1, 4)
        vals = texels.astype(np.float32)
        tmp = np.subtract(self.col[s:e], vals)
        tmp *= np.float32(alpha)
        vals += tmp
        del tmp
        vals += np.float32(0.5)  # rounds: every value is >= 0
        np.copyto(texels, vals, casting="unsafe")

    def _texel_index(self, uv, face, out):
        """Flat texel index (into ``out``, int64) in the output cube of particles at ``uv`` (all within -1..1) on
        ``face``. The cube's size is a power of two: both texel coordinates are made at once as the two int32
        halves of an int64 (column + row * 2**32: little-endian, as every platform Blender runs on), whose row is
        brought to row * size by one shift."""
        r = self.res
        hr = np.float32(0.5 * r)
        p = uv.view(np.float32) * hr
        p += hr
        np.minimum(p, np.float32(r - 1), out=p)  # u = 1 or v = 1 lands on the last texel
        q = p.astype(np.int32).view(np.int64)  # truncation is the floor: every value is >= 0
        np.right_shift(q, 32 - (r.bit_length() - 1), out=out)  # row * r: the column's bits shift out
        q &= r - 1
        out += q
        q = np.multiply(face, r * r, dtype=np.int64)
        out += q
        return out

    def _sort_batch(self, s, e, threaded=False):
        """Order a batch's particles by coarse cube cell (16-bit keys: a linear-time radix sort), so each chunk
        covers a compact patch of the sphere and its gathers from the field and the texture stay in cache.
        ``threaded``: the keys and the three reorderings on the worker threads (called from this thread only)."""
        cells = SORT_CELLS
        key = np.empty(e - s, dtype=np.uint16)

        def keys(s0):
            e0 = min(e, s0 + CHUNK)
            uv = self.uv[s0:e0]
            k = self.face[s0:e0].astype(np.int32)
            k *= cells
            q = ((uv.imag + np.float32(1.0)) * np.float32(0.5 * cells)).astype(np.int32)
            np.clip(q, 0, cells - 1, out=q)
            k += q
            k *= cells
            q = ((uv.real + np.float32(1.0)) * np.float32(0.5 * cells)).astype(np.int32)
            np.clip(q, 0, cells - 1, out=q)
            k += q
            key[s0 - s:e0 - s] = k

        run = self.map if threaded else lambda fn, items: [fn(item) for item in items]
        run(keys, list(range(s, e, CHUNK)))
        order = np.argsort(key, kind="stable")
        col = self.col.view(np.uint64).reshape(-1)  # a particle's RGBA as one 64-bit item

        def reorder(arr):
            arr[s:e] = arr[s:e][order]

        run(reorder, [self.uv, self.face, col])

    def map(self, fn: Callable[[_T], object], items: Sequence[_T]) -> None:
        """Run ``fn`` on every item on the worker threads (in order on this thread with one thread); waits for all."""
        if self._pool is not None and len(items) > 1:
            list(self._pool.map(fn, items))
        else:
            for item in items:
                fn(item)

    def step(self, count: int = 1) -> None:
        p = self.params
        for _ in range(count):
            if p.lifetime > 0 and self.iteration > 0:
                for b, (s, e) in enumerate(self.batches):
                    if self.batch_age(b) == 0:
                        self._spawn(b, s, e, generation=self.iteration)
            if SORT_INTERVAL and self.iteration % SORT_INTERVAL == 0:
                if len(self.batches) == 1:
                    self._sort_batch(*self.batches[0], threaded=True)
                else:
                    self.map(lambda b: self._sort_batch(*b), self.batches)
            alphas = [self.batch_alpha(b) for b in range(len(self.batches))]
            for wave, items in zip(self.waves, self.items, strict=True):
                o, end = wave[0][1], wave[-1][2]
                self.map(lambda c, o=o, alphas=alphas: self._move_chunk(c[1], c[2], o, alphas[c[0]]), items)
                # write back in particle order: the last particle on a texel wins (deterministic)
                self._image64[self._pidx[:end - o]] = self._vals[:end - o]
            self.iteration += 1
            if p.blur_interval and self.iteration % p.blur_interval == 0:
                self.blur_and_fade()

    def blur_and_fade(self) -> None:
        """Blend toward a 3x3 binomial blur (across face edges) by ``blur``, then fade toward the centre colour
        (or each texel's start colour) by ``fade_rate``, in place: each face in bands of ``BLUR_ROWS`` rows (bounded
        memory, on the worker threads) that read the rows around them as they were before the pass."""
        p = self.params
        r = self.res
        k = np.float32(p.blur)
        fr = np.float32(p.fade_rate)
        if k == 0 and fr == 0:
            return
        img = self.image.reshape(6, r, r, 4)
        target = np.append(self.centre, np.float32(0.0 if p.cloud_mode else 1.0)).astype(np.float32) * TEXEL_MAX
        bands = [(f, a, min(r, a + BLUR_ROWS)) for f in range(6) for a in range(0, r, BLUR_ROWS)]
        frame = above = below = None
        if k > 0:
            # every face's border from its neighbours, and the rows next to each band, before any texel changes
            border = self.image[self._border].astype(np.float32)  # (6, 4r + 4, 4), rows of _ring in order
            mid = border[:, r + 2:r + 2 + 2 * r].reshape(6, r, 2, 4)
            frame = (border[:, :r + 2], border[:, -(r + 2):], mid[:, :, 0], mid[:, :, 1])  # top, bottom, left, right
            above = {(f, a): img[f, a - 1].astype(np.float32) for f, a, _ in bands if a > 0}
            below = {(f, b): img[f, b].astype(np.float32) for f, _, b in bands if b < r}

        def band(item):
            f, a, b = item
            out = img[f, a:b]
            face = out.astype(np.float32)
            if k > 0:
                assert frame is not None and above is not None and below is not None  # made when k > 0
                top, bottom, left, right = (x[f] for x in frame)
                q = np.empty((b - a + 2, r + 2, 4), dtype=np.float32)
                q[1:-1, 1:-1] = face
                q[1:-1, 0] = left[a:b]
                q[1:-1, -1] = right[a:b]
                if a == 0:
                    q[0] = top
                else:
                    q[0, 1:-1] = above[(f, a)]
                    q[0, 0], q[0, -1] = left[a - 1], right[a - 1]
                if b == r:
                    q[-1] = bottom
                else:
                    q[-1, 1:-1] = below[(f, b)]
                    q[-1, 0], q[-1, -1] = left[b], right[b]
                h = q[:, :-2] + q[:, 2:]
                h += q[:, 1:-1]
                h += q[:, 1:-1]
                del q
                bl = h[:-2] + h[2:]
                bl += h[1:-1]
                bl += h[1:-1]  # 16 x the blur
                del h
                bl *= k / np.float32(16.0) * (np.float32(1.0) - fr)
                face *= (np.float32(1.0) - k) * (np.float32(1.0) - fr)
                face += bl
                del bl
            else:
                face *= np.float32(1.0) - fr
            if fr > 0:
                if self.base is not None:
                    face[..., :3] += fr * self.base[(f * r + a) * r:(f * r + b) * r].reshape(b - a, r, 3)
                    face[..., 3] += fr * TEXEL_MAX
                else:
                    face += fr * target
            face += np.float32(0.5)  # rounds: every value is >= 0
            np.copyto(out, face, casting="unsafe")

        self.map(band, bands)

    def texels(self, sl: slice | np.ndarray = slice(None)) -> npt.NDArray[np.float32]:
        """float32 RGBA in 0..1 of the texture's texels ``sl`` (flat texel index)."""
        out = self.image[sl].astype(np.float32)
        out *= np.float32(1.0 / TEXEL_MAX)
        return out

    # -- outputs
    @property
    def channels(self) -> int:
        """Channels of the output images: 3 (RGB), or 4 (RGBA) in cloud mode."""
        return 4 if self.params.cloud_mode else 3

    def cloud_mask_at(self, d: np.ndarray) -> np.ndarray:
        """Cloud mode's density mask in (0, 1] at unit directions d (n, 3): a fixed fractal noise (after
        gaseous-giganticus -C: noise at 3.6 x the noise scale, shaped and clamped), blended with 1 by
        ``1 - cloud_noise``. Built once on a padded cube of 128 per face and sampled bilinearly (seamless)."""
        if self._coarse is None:
            p = self.params
            m = 128
            g = face_directions(m, pad=1).reshape(-1, 3)
            perm = _perm(p.seed ^ 0xC10D)
            n = np.zeros(len(g))
            total = 0.0
            for o in range(p.octaves):
                amp = 1.0 if o == 0 else p.falloff ** (o * p.gain)
                q = g * (3.6 * p.noise_scale * 2.0 ** o)
                val, _, _, _ = simplex4_grad(q[:, 0], q[:, 1], q[:, 2], np.full(len(g), p.w_offset + 10.0 + 7.0 * o),
                                             perm)
                n += amp * val
                total += amp
            n /= max(total, 1e-9)
            n = np.where(n > 0.5, n * (0.5 + n), n)
            n = np.where(n < 0.0, n * (1.25 + n), n)
            n = np.clip(n, -0.333, 0.666) + 0.334
            n = 1.0 - p.cloud_noise + p.cloud_noise * n
            self._coarse = n.reshape(6, m + 2, m + 2, 1).astype(np.float32)
        return sample_cube(self._coarse, d)[:, 0].astype(np.float32)

    def _out_pixels(self, sl: slice | np.ndarray = slice(None)) -> np.ndarray:
        """Output pixels of texels ``sl``: RGB, or in cloud mode the cloud colour with alpha = the painted
        brightness (the particles' palette brightness x the cloud mask where they started)."""
        rgb = self.image[sl, :3]
        if not self.params.cloud_mode:
            out = rgb.astype(np.float32)
            out *= np.float32(1.0 / TEXEL_MAX)
            return out
        out = np.empty((len(rgb), 4), dtype=np.float32)
        out[:, :3] = np.asarray(self.params.cloud_color[:3], dtype=np.float32)
        a = rgb.sum(axis=1, dtype=np.float32)
        a *= np.float32(1.0 / (3.0 * TEXEL_MAX))
        np.clip(a, 0.0, 1.0, out=out[:, 3])
        return out

    def _padded_out(self) -> np.ndarray:
        """(6, res+2, res+2, C) float32 output pixels with each face's border from its neighbours."""
        r = self.res
        c = self.channels
        pad = np.empty((6, r + 2, r + 2, c), dtype=np.float32)
        for f in range(6):
            pad[f, 1:-1, 1:-1] = self.face_rgb(f)
        border = self._border.reshape(-1)
        pad[:, _ring(r)] = self._out_pixels(border).reshape(6, -1, c)
        return pad

    def face_rgb(self, f: int) -> np.ndarray:
        """(res, res, C) float32 output pixels of face ``f`` (``FACES`` order), row 0 at the top; C = 3 (RGB), or
        4 (RGBA) in cloud mode."""
        r = self.res
        return self._out_pixels(slice(f * r * r, (f + 1) * r * r)).reshape(r, r, self.channels)

    def face_png_pixels(self, f: int) -> np.ndarray:
        """(res, res, C) uint8 pixels of face ``f`` as an 8-bit PNG holds them: ``to_uint8(face_rgb(f))``, made in
        blocks of rows (a few MB at a time instead of a float copy of the face)."""
        r = self.res
        out = np.empty((r, r, self.channels), dtype=np.uint8)
        rows = max(1, (1 << 16) // r)
        for a in range(0, r, rows):
            b = min(r, a + rows)
            out[a:b] = to_uint8(self._out_pixels(slice((f * r + a) * r, (f * r + b) * r))).reshape(b - a, r, -1)
        return out

    def cube_faces(self) -> np.ndarray:
        """(6, res, res, C) float32 in 0..1, faces in ``FACES`` order, row 0 at the top (C as ``face_rgb``)."""
        return np.stack([np.array(self.face_rgb(f)) for f in range(6)])

    def equirect(self, width: int | None = None) -> np.ndarray:
        width = width or self.params.equirect_width
        return equirect_from_cube(self._padded_out(), width)

    def flow_velocity(self, width: int) -> np.ndarray:
        """(width/2, width, 3) float32 flow in real units: east and north velocity and the speed, in radians of arc
        per frame (``frame_iterations`` iterations), on the equirectangular grid (what the float EXR flow map
        holds)."""
        d = equirect_directions(width)
        vel = sample_cube(self.field.velocity, d.reshape(-1, 3)).reshape(d.shape)
        east = np.stack([-d[..., 1], d[..., 0], np.zeros(d.shape[:2])], axis=-1)
        en = np.linalg.norm(east, axis=-1, keepdims=True)
        east = np.divide(east, en, out=np.zeros_like(east), where=en > 1e-9)
        north = np.cross(d, east)
        per_frame = float(self.params.frame_iterations)
        ve = np.sum(vel * east, axis=-1) * per_frame
        vn = np.sum(vel * north, axis=-1) * per_frame
        return np.stack([ve, vn, np.sqrt(ve * ve + vn * vn)], axis=-1).astype(np.float32)

    def flow_equirect(self, width: int, velocity: np.ndarray | None = None) -> np.ndarray:
        """(width/2, width, 3) flow map for 8-bit images: ``encode_flow`` of ``flow_velocity`` with the bake's fixed
        ``flow_scale`` (R east, G north: 0.5 = still, 0 / 1 = -scale / +scale; B speed / scale; clamped)."""
        if velocity is None:
            velocity = self.flow_velocity(width)
        return encode_flow(velocity, flow_scale(self.params))

    def directions(self) -> np.ndarray:
        """(n, 3) float64 unit directions of all particles."""
        return face_uv_to_dir(self.face, self.uv.real.astype(np.float64),
                              self.uv.imag.astype(np.float64))

    def density_by_latitude(self, bands: int) -> np.ndarray:
        """Particle counts in ``bands`` equal-area latitude bands (south to north)."""
        z = self.directions()[:, 2]
        k = np.clip(((z + 1.0) * 0.5 * bands).astype(np.int64), 0, bands - 1)
        return np.bincount(k, minlength=bands)
