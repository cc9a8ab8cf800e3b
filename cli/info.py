"""`envfx info`: the EnvFX version and its features, or what EnvFX does in each scene of .blend files (nothing is
changed or saved)."""

from __future__ import annotations

import argparse
import json
import math
import os
import tomllib
from typing import Any

import bpy

from .. import bridge
from ..core.features import FEATURES
from ..operators import bend as bend_ops
from ..operators import snow as snow_ops
from ..operators import wind as wind_ops
from ..shader_nodes import bend_gpu, wind_gpu, wind_rigid
from . import batch


def manifest() -> dict:
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "blender_manifest.toml")
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "info", help="Print the EnvFX version and the features it has; with .blend files, what EnvFX does in each",
        description="Without files: the EnvFX version and its features. With .blend files: per scene, the world "
        "bend (mode, axis, pivot, numbers, bent objects), the live wind and the snow (meshes, trails, actors). "
        "Nothing is changed or saved.")
    p.add_argument("blend", nargs="*", help=".blend file(s) to describe")
    p.add_argument("--json", action="store_true", help="one JSON object per scene and file, for scripts")
    p.set_defaults(func=run)


def scene_report(scene: bpy.types.Scene) -> dict[str, Any]:
    """What EnvFX does in ``scene``: plain data (names and numbers) for ``envfx info``."""
    settings = bridge.envfx_settings(scene)
    b, w, sn = settings.bend, settings.wind, settings.snow
    objects = list(scene.objects)
    snow = snow_ops.snow_objects(scene)
    return {
        "scene": scene.name,
        "bend": {
            "enabled": b.enabled, "mode": b.mode, "axis": b.axis, "pivot": b.pivot.name if b.pivot else None,
            "strength": round(b.strength, 6), "spread": round(b.spread, 6), "side_strength": round(b.side_strength, 6),
            "side_spread": round(b.side_spread, 6), "horizon_offset": round(b.horizon_offset, 6),
            "objects": sorted(o.name for o in objects if bend_ops.bend_modifiers(o)),
            "gpu": sorted(o.name for o in objects if bend_gpu.is_gpu_bent(o)),
        },
        "wind": {
            "strength": round(w.strength, 6), "source_object": w.source_object.name if w.source_object else None,
            "objects": sorted(o.name for o in objects if wind_ops.wind_modifiers(o)),
            "rigid": sorted(o.name for o in objects if wind_rigid.is_rigid(o)),
            "gpu": sorted(o.name for o in objects if wind_gpu.is_gpu_wind(o)),
        },
        "snow": {
            "meshes": sorted(o.name for o in snow),
            "trails": sorted(o.name for o in snow if snow_ops.trails_modifiers(o)),
            "from_bake": sorted(o.name for o in snow if snow_ops.buffer_modifiers(o)),
            "actors": sn.actors.name if sn.actors else None,
        },
    }


def run(args: argparse.Namespace) -> int:
    m = manifest()
    if not args.blend:
        print(f"EnvFX {m['version']} (extension id {m['id']}) on Blender {bpy.app.version_string}")
        print("features: " + ", ".join(FEATURES))
        return 0
    batch.check_blends(args.blend)
    return batch.run_files("info", args.blend, lambda path: _info_file(args, path), changes=False)


def _finite_or_null(value):
    """``value`` (nested dicts and lists) with every NaN or infinite number as None: JSON has no NaN (a script can
    store one in a setting), and strict parsers reject the line."""
    if isinstance(value, dict):
        return {k: _finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_or_null(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _info_file(args, path: str):
    batch.open_blend(path, quiet=args.json)
    for scene in bpy.data.scenes:
        report = {"file": path, **scene_report(scene)}
        if args.json:
            print(json.dumps(_finite_or_null(report), allow_nan=False), flush=True)
            continue
        b, w, sn = report["bend"], report["wind"], report["snow"]
        print(f"{path}, scene {scene.name!r}:")
        print(f"  bend: {b['mode']} {b['axis']}{'' if b['enabled'] else ' (off)'}, pivot {b['pivot']}, "
              f"strength {b['strength']:g}, spread {b['spread']:g}; {len(b['objects'])} object(s) bent"
              + (f", {len(b['gpu'])} on the GPU" if b["gpu"] else ""))
        print(f"  wind: strength {w['strength']:g}, source {w['source_object']}; {len(w['objects'])} object(s) "
              f"in the wind, {len(w['rigid'])} in rigid sway" + (f", {len(w['gpu'])} on the GPU" if w["gpu"] else ""))
        print(f"  snow: {len(sn['meshes'])} mesh(es), {len(sn['trails'])} with trails, {len(sn['from_bake'])} "
              f"from a bake; actors {sn['actors']}")
