"""gasgiant.json: what each image file of a bake holds, its layout and orientation, and how to decode the flow map."""

from __future__ import annotations

import numpy as np

from .cube import FACES
from .flow import FLOW_NOISE_PEAK, FLOW_VORTEX_PEAK, flow_scale
from .layouts import ENGINE_AXES, ENGINE_SLOTS, _orient_name, cube_layout_faces
from .outputs import METADATA_FORMAT, METADATA_VERSION, all_output_names, output_names
from .params import GasGiantParams


class _FlowStats:
    """The fastest flow speed over all frames and how many texels the 8-bit flow map clamped."""

    def __init__(self):
        self.max_speed = 0.0
        self.clamped = 0
        self.texels = 0

    def add(self, speed: np.ndarray, scale: float):
        self.max_speed = max(self.max_speed, float(speed.max()))
        self.clamped += int(np.count_nonzero(speed > scale))
        self.texels += speed.size


def _vec(v) -> list:
    return [float(x) + 0.0 for x in np.round(np.asarray(v, dtype=np.float64), 6)]


def _file_entry(params: GasGiantParams, key: str) -> dict:
    """{"file": name} for a still, {"file": pattern with {frame:04d}, "frames": [1, N]} for a sequence."""
    if params.frames == 1:
        return {"file": output_names(params, None)[key]}
    return {"file": output_names(params, 0)[key].replace("_0000.", "_{frame:04d}."), "frames": [1, params.frames]}


def bake_metadata(params: GasGiantParams, stats: _FlowStats | None = None) -> dict:
    """What gasgiant.json says: per image file its content, layout, orientation and colour space, and the flow
    map's unit and fixed scale (one for all frames) with the formula that decodes it."""
    exts = {"PNG": ("png",), "EXR": ("exr",), "PNG_EXR": ("png", "exr")}[params.file_format]
    keys = {ext: ("" if ext == exts[0] else "_exr") for ext in exts}
    content = {"png": "RGB", "exr": "RGB"}
    alpha = {}  # cloud mode: how each file stores its colour against its alpha
    if params.cloud_mode:
        content = {"png": "RGBA: cloud colour, alpha = cloud cover (straight: colour not multiplied by alpha)",
                   "exr": "RGBA: cloud colour x alpha, alpha = cloud cover (premultiplied, as OpenEXR defines colour)"}
        alpha = {"png": "straight", "exr": "premultiplied"}
    colour_space = {"png": "sRGB", "exr": "linear Rec.709 (scene linear, sRGB primaries)"}
    images = []
    engine = params.cube_layout != "BLENDER"
    for entry in cube_layout_faces(params.cube_layout):
        for ext, key in keys.items():
            item = _file_entry(params, f"cube_{entry['name']}{key}")
            item.update(content=f"planet colour, {content[ext]}", **_alpha_entry(alpha, ext),
                        colour_space=colour_space[ext], layout="cube face",
                        width=params.cubemap_size, height=params.cubemap_size, blender_face=FACES[entry["face"]],
                        normal=_vec(entry["normal"]), right=_vec(entry["right"]), up=_vec(entry["up"]))
            if engine:
                m = ENGINE_AXES[params.cube_layout]
                item.update(slot=entry["slot"], slot_index=ENGINE_SLOTS.index(entry["slot"]),
                            engine_normal=_vec(m @ entry["normal"]), engine_right=_vec(m @ entry["right"]),
                            engine_up=_vec(m @ entry["up"]))
            else:
                item["engine_slots"] = {}
                for lay in ("GLTF", "UNITY"):
                    e = next(e for e in cube_layout_faces(lay) if e["face"] == entry["face"])
                    item["engine_slots"][lay.lower()] = {"slot": e["slot"], "transform": _orient_name(e["t"])}
            images.append(item)
    flow = None
    if params.equirect_width:
        w = params.equirect_width
        fw = min(w, 1024)
        for ext, key in keys.items():
            item = _file_entry(params, f"equirect{key}")
            item.update(content=f"planet colour, {content[ext]}", **_alpha_entry(alpha, ext),
                        colour_space=colour_space[ext], layout="equirectangular", width=w, height=w // 2)
            images.append(item)
        scale = flow_scale(params)
        for ext, key in keys.items():
            item = _file_entry(params, f"flow{key}")
            item.update(layout="equirectangular", width=fw, height=fw // 2, colour_space="non-colour data (linear)")
            if ext == "png":
                item.update(content="flow map, 8-bit encoded: R east, G north velocity, B speed",
                            decode="east = (2 R - 1) * scale, north = (2 G - 1) * scale, speed = B * scale "
                            "(radians per frame; R, G, B in 0..1)",
                            still=0.5, clamped=f"clamped to the scale ({scale:.6g} radians per frame): an east or "
                            f"north velocity beyond +-scale is stored as 0 or 1 and a speed above it as B = 1 "
                            f"(the float EXR is not clamped; flow.clamped_texels counts them)",
                            quantisation="8 bits: steps of 2 x scale / 255 for east and north; the still value 0.5 "
                            "is stored as 128 / 255 and decodes to scale / 255 (below one step)")
            else:
                item.update(content="flow map, real velocities: R east, G north velocity, B speed, in radians per "
                            "frame (32-bit float, not clamped)", decode="east = R, north = G, speed = B", still=0.0)
            images.append(item)
        flow = {
            "unit": "radians of arc on the unit sphere per frame (one frame = iterations_per_frame simulation "
                    "iterations, the step between the images of a sequence); per second = per frame x the rate "
                    "the sequence is played at (frames per second)",
            "iterations_per_frame": params.frame_iterations,
            "scale": scale,
            "scale_source": "flow_scale setting" if params.flow_scale > 0 else
            "automatic from the settings: radians(velocity_factor) / 20 x iterations_per_frame x (|band_speed| + "
            f"{FLOW_NOISE_PEAK} x turbulence + min(vortices, 2) x {FLOW_VORTEX_PEAK:.4f} x |vortex_strength|)",
            "same_for_all_frames": True,
            "still_png": 0.5,
            "still_exr": 0.0,
            "directions": "east = toward increasing longitude (Blender +Y at longitude 0), north = toward Blender +Z "
                          "(the pole); both tangent to the sphere",
            "to_equirect_uv": "per frame the image column advances by east / (2 pi cos(latitude)) x width and "
                              "the row (counted from the top) by -north / pi x height",
        }
        if stats is not None and stats.texels:
            flow["max_speed_baked"] = stats.max_speed
            flow["clamped_texels"] = stats.clamped
            flow["clamped_fraction"] = stats.clamped / stats.texels
    return {
        "format": METADATA_FORMAT,
        "version": METADATA_VERSION,
        "frames": params.frames,
        "frame_numbering": "none (a still)" if params.frames == 1 else "{frame:04d} from 0001",
        "axes": "directions are Blender world axes (Z up, the planet's pole) unless named engine_*",
        "cube_layout": params.cube_layout.lower(),
        "cube_layout_info": _layout_info(params.cube_layout),
        "equirect": "row 0 = north pole (+Z), rows uniform in latitude; column 0 starts at longitude -180 (the -X "
                    "side), longitude 0 (the +X side) is the middle, longitude +90 = +Y; direction of pixel centre "
                    "(lon, lat) = (cos lat cos lon, cos lat sin lon, sin lat)",
        "flow": flow,
        "images": images,
        "outputs": all_output_names(params),
    }


def _alpha_entry(alpha: dict, ext: str) -> dict:
    return {"alpha": alpha[ext]} if ext in alpha else {}


def _layout_info(layout: str) -> str:
    if layout == "BLENDER":
        return ("faces px, nx, py, ny, pz, nz are Blender's +X, -X, +Y, -Y, +Z, -Z seen from outside the planet, "
                "the side faces with +Z up; right / up: the world direction of the image's +column / top. "
                "engine_slots: where each file goes in a D3D/OpenGL cube map (+X, -X, +Y, -Y, +Z, -Z) and how to "
                "turn it first, for gltf (right-handed Y-up: engine = (x, z, -y), as glTF, Godot, OpenGL) and unity "
                "(left-handed Y-up: engine = (-x, z, -y), as Unity imports glTF and FBX); or bake with cube_layout "
                "gltf / unity")
    m = ENGINE_AXES[layout].astype(int).tolist()
    hand = "right-handed (glTF, Godot, OpenGL, Vulkan, three.js)" if layout == "GLTF" else \
        "left-handed (Unity, as its glTF and FBX importers turn Blender files)"
    return (f"standard D3D/OpenGL cube-map faces posx, negx, posy, negy, posz, negz = slots +X, -X, +Y, -Y, +Z, -Z "
            f"(slot_index 0..5) of a Y-up {hand} engine space, engine = {m} @ blender; image column = s, row 0 = "
            f"t = 0 (the OpenGL major-axis table): a cube sampler given an engine direction returns the texel the "
            f"equirect image shows for that direction; use the files as they are")
