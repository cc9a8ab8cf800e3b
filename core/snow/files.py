"""The bake's files: how much it writes (checked against the free disk space first), the staging folder it
writes into (``core.outputs``: those a killed bake left behind are removed), and the OpenEXR images."""

from __future__ import annotations

import json
import struct

import numpy as np
import numpy.typing as npt

from .. import bend_engines, exr, outputs
from .base import SnowError

# a bake writes into "<out_dir>/.envfx-staging-snow-<pid>-<random>" (``core.outputs``' naming rule) and moves the
# files into place at the end
TEMP_PREFIX = outputs.STAGING_PREFIX + "snow-"


# the longest a float can print in the JSON (repr of -2.2250738585072014e-308) and the lowest frame Blender has
_LONGEST_FLOAT = -1.2345678901234567e-100
_LOWEST_FRAME = -1048574


def _json_frame_bytes(basename: str) -> int:
    """At most how many bytes one frame's entry adds to the bake's JSON (``buffer_metadata``'s "frames", written
    with indent=1): its number, origin, image name and the engines' uv offsets, every float at its longest."""
    entry = {"frame": _LOWEST_FRAME, "origin": [_LONGEST_FLOAT] * 2,
             "file": f"{basename}_{_LOWEST_FRAME:04d}.exr",
             "uv_offset": {e: [_LONGEST_FLOAT] * 2 for e in bend_engines.ENGINES}}
    return len(json.dumps({"frames": [entry, entry]}, indent=1)) - len(json.dumps({"frames": [entry]}, indent=1))


def bake_output_bytes(resolution: int, images: int, frames: int | None = None, basename: str = "snow_buffer") -> int:
    """At most how many bytes a bake writes: ``images`` uncompressed float RGBA EXRs of ``resolution``^2 texels
    (16 bytes a texel, 16 a scanline for its offset and block header, a header of about 350 bytes) and the JSON,
    which lists every one of the ``frames`` stepped through (default ``images``; more with only the final frame
    written): at most ``_json_frame_bytes`` a frame, and 4 KiB for the rest."""
    res = int(resolution)
    frames = int(images) if frames is None else int(frames)
    per_image = res * res * 16 + 16 * res + 512
    return int(images) * per_image + max(frames, int(images)) * _json_frame_bytes(basename) + 4096


def check_disk_space(out_dir: str, resolution: int, images: int, frames: int | None = None,
                     basename: str = "snow_buffer") -> int:
    """Refuse a bake whose files would not fit on the disk of ``out_dir`` (or of its nearest existing parent);
    returns the estimate in bytes (``bake_output_bytes``). The staging folders a killed bake left there count as
    free: the bake removes them before it writes (``core.outputs``)."""
    need = bake_output_bytes(resolution, images, frames, basename)
    res = int(resolution)
    return outputs.check_disk_space(out_dir, need, f"{images} frame(s) of {res}x{res} float EXR",
                                    "bake fewer frames, a lower resolution or only the final frame", error=SnowError)


def remove_stale_temp(out_dir: str) -> list:
    """Remove the staging folders a killed bake left in ``out_dir`` (returns their names): ``core.outputs``."""
    return outputs.remove_stale(out_dir)


def stale_temp_folders(out_dir: str) -> list:
    """The paths of the staging folders a killed bake left in ``out_dir`` (what ``remove_stale_temp`` removes)."""
    return outputs.stale_folders(out_dir)


def write_exr(path: str, rgba: npt.ArrayLike) -> None:
    """Write a (H, W, 4) float32 array (row 0 = min world y) as an uncompressed 32-bit float RGBA OpenEXR
    (top row of the image = max world y, as seen from above)."""
    data = np.asarray(rgba, dtype=np.float32)
    if data.ndim != 3 or data.shape[2] != 4:
        raise SnowError("write_exr needs an (H, W, 4) array")
    exr.write_exr(path, data[::-1], "RGBA", exr.NO_COMPRESSION)


def read_exr(path: str) -> np.ndarray:
    """Read back what ``write_exr`` writes; returns (H, W, 4) RGBA, row 0 = min world y."""
    try:
        px, names = exr.read_exr(path)
    except (ValueError, KeyError, IndexError, struct.error) as err:
        raise SnowError(f"{path!r} is not an EXR file EnvFX can read ({err})") from None
    if sorted(names) != ["A", "B", "G", "R"]:
        raise SnowError(f"{path!r} has channels {names}, not R, G, B, A")
    return np.ascontiguousarray(px[..., [names.index(c) for c in "RGBA"]][::-1])
