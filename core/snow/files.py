"""The bake's files: how much it writes (checked against the free disk space first), the temporary folders
it writes into (and those a killed bake left behind), and the OpenEXR images."""

from __future__ import annotations

import json
import os
import shutil
import struct
import time

import numpy as np

from .. import bend_engines, exr
from .base import SnowError

# a bake writes into "<out_dir>/.envfx_snow_<pid>_<random>" and moves the files into place at the end
TEMP_PREFIX = ".envfx_snow_"
_STARTED = time.time()  # no temporary folder of this process is older than this


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


def _size_text(n: int) -> str:
    """A byte count for messages: GB from 1 GiB up, MB below (a small bake is not "0.00 GB")."""
    return f"{n / 2**30:,.2f} GB" if n >= 2**30 else f"{n / 2**20:,.1f} MB"


def check_disk_space(out_dir: str, resolution: int, images: int, frames: int | None = None,
                     basename: str = "snow_buffer") -> int:
    """Refuse a bake whose files would not fit on the disk of ``out_dir`` (or of its nearest existing parent);
    returns the estimate in bytes (``bake_output_bytes``). The temporary folders a killed bake left there
    (``stale_temp_folders``) count as free: the bake removes them before it writes."""
    need = bake_output_bytes(resolution, images, frames, basename)
    probe = os.path.abspath(out_dir)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    free = shutil.disk_usage(probe).free
    if need > free and os.path.isdir(out_dir):
        free += sum(_folder_bytes(path) for path in stale_temp_folders(out_dir))
    if need > free:
        res = int(resolution)
        raise SnowError(f"The bake would write up to {_size_text(need)} ({images} frame(s) of {res}x{res} float "
                        f"EXR) but only {_size_text(free)} is free in {out_dir!r}: bake fewer frames, a lower "
                        f"resolution or only the final frame, or free disk space")
    return need


_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_ERROR_ACCESS_DENIED = 5
_STILL_ACTIVE = 259


def _windows_api():
    """(kernel32, get_last_error) through ctypes, Windows only (tests pass a fake on any system)."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
    kernel32.GetExitCodeProcess.restype = wintypes.BOOL
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    return kernel32, ctypes.get_last_error


def _pid_running_windows(pid: int) -> bool:
    """Windows: open the process to ask for its exit code. (``os.kill(pid, 0)`` is no probe there: signal 0 is
    CTRL_C_EVENT, sent to the console process group, and would interrupt console programs.)"""
    import ctypes

    if not 0 < pid <= 0xFFFFFFFF:
        return False  # not a Windows process id
    kernel32, last_error = _windows_api()
    handle = kernel32.OpenProcess(_PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return last_error() == _ERROR_ACCESS_DENIED  # it exists but is not ours to open: keep its folder
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True  # no way to tell: keep its folder
        return code.value == _STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def _folder_bytes(path: str) -> int:
    total = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _pid_running(pid: int) -> bool:
    if os.name == "nt":
        return _pid_running_windows(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True  # someone else's process, or no way to tell: keep its folder
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # Linux: a killed process not yet reaped is a zombie
            return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def remove_stale_temp(out_dir: str) -> list:
    """Remove the temporary folders a killed bake left in ``out_dir`` (returns their names): only folders EnvFX
    named ``.envfx_snow_*``, older than this process and not of a process still running."""
    removed = []
    for path in stale_temp_folders(out_dir):
        try:
            shutil.rmtree(path)
        except OSError:
            continue
        removed.append(os.path.basename(path))
    return removed


def stale_temp_folders(out_dir: str) -> list:
    """The paths of the temporary folders a killed bake left in ``out_dir`` (what ``remove_stale_temp``
    removes)."""
    stale = []
    try:
        entries = list(os.scandir(out_dir))
    except OSError:
        return stale
    for entry in entries:
        if not entry.name.startswith(TEMP_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        pid = entry.name[len(TEMP_PREFIX):].split("_", 1)[0]
        if pid.isdigit() and (int(pid) == os.getpid() or _pid_running(int(pid))):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= _STARTED:
                continue
        except OSError:
            continue
        stale.append(entry.path)
    return stale


# --- OpenEXR ------------------------------------------------------------------------------------------------

def write_exr(path: str, rgba) -> None:
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
