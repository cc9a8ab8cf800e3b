"""The whole bake as a job generator: validate, build or load the velocity fields, run the simulation, write the
files through a temporary folder and move them into place at the end (a cancelled bake leaves nothing behind)."""

from __future__ import annotations

import os
import time
from collections.abc import Generator

from .. import jobs, outputs
from .field import build_field_steps, lerp_field
from .field_files import check_field_files, save_fields
from .flow import encode_flow, flow_scale
from .layouts import cube_layout_faces, layout_face_image
from .metadata import _FlowStats, bake_metadata
from .outputs import (METADATA_NAME, BakeResult, _write_image, _write_json, all_output_names, output_names,
                      previous_outputs)
from .params import GasGiantError, GasGiantParams, available_memory, field_times
from .simulation import Simulation
from .state import check_state, load_state, restore, save_state, state_path


def check_output_folder(folder: str) -> None:
    outputs.check_folder(folder, error=GasGiantError, empty="No output folder: choose where the textures go")


def check_part(params: GasGiantParams, part: tuple | None, state_dir: str | None) -> tuple:
    """(first, last) frames (1-based, inclusive) to bake of ``params``' sequence; GasGiantError for a part that does
    not fit (what to do)."""
    if part is None:
        return 1, params.frames
    first, last = part
    if not 1 <= first <= last <= params.frames:
        raise GasGiantError(f"Frames {first}-{last} are not a part of the {params.frames} frame(s) baked: give "
                            f"FIRST-LAST with 1 <= FIRST <= LAST <= {params.frames}")
    if (first, last) != (1, params.frames):
        if not state_dir:
            raise GasGiantError("A part of a sequence needs the folder of the states between parts (--state-dir): "
                                "each part starts from the state the part before it saved")
        if params.save_field:
            raise GasGiantError("--save-field saves the velocity fields of the whole sequence, and a part builds "
                                "only its own: bake the whole sequence once with --save-field, then the parts with "
                                "--load-field")
        if first > 1:
            check_state(state_path(state_dir, first - 1), params, first - 1)
    return first, last


def bake(params: GasGiantParams, folder: str, check_memory: bool = True, fields: dict | None = None,
         part: tuple | None = None, state_dir: str | None = None) -> Generator[float, None, BakeResult]:
    """The whole bake as a job generator (yields progress 0..1, returns a ``BakeResult``).

    Validates everything first (settings, memory, output folder, the velocity field file to load or the place to
    save one); writes every file into a temporary folder next to ``folder`` and moves them in only at the end, so
    closing the generator (cancel) leaves nothing behind. Then it removes the files the previous bake in
    ``folder`` wrote (``previous_outputs``: what its gasgiant.json lists) that this bake does not write, and says
    so in the result (``removed``); other files are left alone. Animated bakes build the velocity field every
    ``field_interval`` frames and interpolate between (see ``field_times``). ``fields``: what
    ``check_field_files(params)`` returned when the caller has already run it (the field file is not read again).

    ``part``: (first, last) frames of the sequence to bake here (a farm task's share; ``check_part``), with
    ``state_dir`` the folder of the simulation states between parts (``state``): a part after the first starts from
    the state saved at the end of the frame before it, a part before the last saves its own at its end. Each part
    writes its frames, the same files as the whole bake's; the last part writes gasgiant.json and removes the
    previous bake's files that the whole bake does not write.
    """
    params.validate(available_memory() if check_memory else None)
    first, last = check_part(params, part, state_dir)
    check_output_folder(folder)
    loaded = check_field_files(params) if fields is None else fields
    state = None
    if first > 1:
        assert state_dir, "check_part refuses a part of a sequence without the folder of the states"
        state = load_state(state_path(state_dir, first - 1), params, first - 1)
    keys, at = field_times(params)
    folder = os.path.abspath(folder)
    t0 = time.perf_counter()
    staging = outputs.Staging(folder, "gasgiant", error=GasGiantError)  # removed with the folders it made on failure
    tmp = staging.path
    sim = None
    done = False
    try:
        yield 0.0
        built = {}  # key frame -> Field (the two in use; all of them when saving)
        norm = None
        if loaded:
            norm = next(iter(loaded.values())).noise_norm

        def key_field(k, lo, hi):
            nonlocal norm
            t = k * params.time_step
            if k not in built:
                if t in loaded:
                    built[k] = loaded[t]
                else:
                    built[k] = yield from jobs.within(build_field_steps(params, t, norm), lo, hi - lo)
                norm = built[k].noise_norm
            return built[k]

        if state is None:
            f0 = yield from key_field(0, 0.0, 0.05)
            sim = Simulation(params, time=0.0, field=f0)
        else:  # a later part: the particles and the texture as the part before left them
            norm = float(state["noise_norm"])
            f0 = yield from key_field(at(first - 1)[0], 0.0, 0.05)
            sim = Simulation(params, time=0.0, field=f0)
        total = params.iterations + (params.frames - 1) * params.frame_iterations
        chunk = max(1, min(10, 2_000_000 // max(1, params.particles)))
        written, equis = [], []
        animated = params.frames > 1
        layout = cube_layout_faces(params.cube_layout)
        scale = flow_scale(params)
        flow_stats = _FlowStats()
        if state is not None:
            restore(sim, flow_stats, state)
            del state
        mixed = None
        for f in range(first - 1, last):
            todo = params.iterations if f == 0 else params.frame_iterations
            if f > 0:
                frac = 0.05 + 0.9 * sim.iteration / total
                a, b, w = at(f)
                fa = yield from key_field(a, frac, frac)
                fb = fa
                if w > 0:
                    fb = yield from key_field(b, frac, frac)
                if not params.save_field:  # drop key fields no longer needed
                    for k in [k for k in built if k < a]:
                        del built[k]
                mixed = lerp_field(fa, fb, w, out=mixed)
                sim.set_time(f * params.time_step, mixed)
            while todo > 0:
                k = min(chunk, todo)
                sim.step(k)
                todo -= k
                yield 0.05 + 0.9 * sim.iteration / total
            names = output_names(params, f + 1 if animated else None)

            def write_face(entry, names=names):  # PNG: 8-bit pixels made from the texture directly
                for key, pixels in ((f"cube_{entry['name']}", sim.face_png_pixels),
                                    (f"cube_{entry['name']}_exr", sim.face_rgb)):
                    if key in names:
                        _write_image(os.path.join(tmp, names[key]), layout_face_image(pixels(entry["face"]), entry))

            sim.map(write_face, layout)  # on the worker threads (zlib releases the GIL while it deflates)
            if params.equirect_width:
                eq = sim.equirect()
                vel = sim.flow_velocity(min(params.equirect_width, 1024))
                flow = encode_flow(vel, scale)
                flow_stats.add(vel[..., 2], scale)
                # the PNG holds the fixed 8-bit encoding, the float EXR the real velocities (radians per frame)
                for key, img, is_colour in (("equirect", eq, True), ("equirect_exr", eq, True),
                                            ("flow", flow, False), ("flow_exr", vel, False)):
                    if key in names:
                        _write_image(os.path.join(tmp, names[key]), img, is_colour)
                equis.append(os.path.join(folder, names["equirect"]))
                del eq, flow, vel
            written.extend(os.path.join(folder, n) for n in names.values())
            yield 0.05 + 0.9 * sim.iteration / total
        if params.save_field:
            save_fields(params.save_field, params, {k * params.time_step: fld for k, fld in built.items()})
        if last < params.frames:  # the next part starts from here (saved before this part's frames are moved in)
            assert state_dir, "check_part refuses a part of a sequence without the folder of the states"
            save_state(state_path(state_dir, last), params, last, sim, flow_stats)
        new = sorted(n for n in os.listdir(tmp) if n != outputs.OWNER_NAME)
        stale = []
        if last == params.frames:
            _write_json(os.path.join(tmp, METADATA_NAME), bake_metadata(params, flow_stats))
            whole = set(new) if first == 1 else set(all_output_names(params))
            # read before this bake's gasgiant.json replaces it
            stale = sorted(previous_outputs(folder) - whole - {METADATA_NAME})
        staging.commit(new + ([METADATA_NAME] if last == params.frames else []))  # the list of the files comes last
        done = True
        if first > 1 and last == params.frames and params.equirect_width:  # the planet wears every frame
            equis = [os.path.join(folder, output_names(params, f + 1 if animated else None)["equirect"])
                     for f in range(params.frames)]
        result = BakeResult(folder, written, last - first + 1, equis, time.perf_counter() - t0,
                            os.path.join(folder, METADATA_NAME) if last == params.frames else None)
        for name in stale:  # the previous bake's files that this bake does not write
            try:
                os.remove(os.path.join(folder, name))
                result.removed.append(name)
            except OSError as exc:
                result.not_removed.append((name, exc.strerror or str(exc)))
        return result
    finally:
        if sim is not None:
            sim.close()
        if not done:
            staging.abort()


def run_bake(params: GasGiantParams, folder: str, check_memory: bool = True, part: tuple | None = None,
             state_dir: str | None = None) -> BakeResult:
    """Drive ``bake`` to the end without progress output (scripts and tests)."""
    job = bake(params, folder, check_memory=check_memory, part=part, state_dir=state_dir)
    return jobs.finish(job)
