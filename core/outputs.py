"""Where bakes write: output-folder checks, staged writes, cleanup of a killed bake's leftovers, disk space.

Every bake (gas giant, mips, snow buffer, light map, ...) writes the same way:

1. ``check_folder(path)`` before any work: the folder exists or can be made, and can really be written (a file is
   created and removed again: ``os.access`` says yes to root even on ``/proc``).
2. ``Staging(folder, kind)``: a temporary folder *inside* the output folder, named
   ``.envfx-staging-<kind>-<pid>-<random>``, receives every file; ``commit()`` moves them into place, and leaving
   the ``with`` block without committing (an error, a cancel) removes the folder and any output folder the bake
   created, so the folder is as it was.
3. A bake killed before it could clean up leaves its staging folder behind; the next bake into the same folder
   removes it (``remove_stale``) when the process that made it is gone. Folders named by older EnvFX versions
   (``LEGACY_PREFIXES``) are recognised too.
4. ``check_disk_space(folder, need)`` refuses a bake whose files would not fit, counting stale staging folders as
   free space (they are removed first).

Errors are raised as ``error`` (each feature passes its own exception class, so its callers keep catching one
type); the messages say what is wrong and what to do.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterable

STAGING_PREFIX = ".envfx-staging-"
# staging folders of earlier EnvFX versions: the pid follows the prefix
LEGACY_PREFIXES = (".envfx_snow_", ".envfx_gasgiant_", ".envfx-mips-")
_STARTED = time.time()  # no staging folder of this process is older than this


class OutputError(ValueError):
    """An output folder that cannot be used (the message says what to do)."""


def size_text(n: int) -> str:
    """A byte count for messages: GB from 1 GiB up, MB below (a small bake is not "0.00 GB")."""
    return f"{n / 2**30:,.2f} GB" if n >= 2**30 else f"{n / 2**20:,.1f} MB"


def nearest_existing(path: str) -> str:
    """``path`` or its nearest parent that exists (the part of the path a bake does not have to make)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    return probe


def _probe_write(folder: str) -> str | None:
    """Create and remove a file in ``folder``; None when that works, else the reason."""
    try:
        fd, path = tempfile.mkstemp(prefix=".envfx-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    try:
        os.remove(path)
    except OSError:
        pass
    return None


def check_folder(path: str, what: str = "Output folder", error: type[Exception] = OutputError,
                 empty: str = "No output folder: choose where the files go") -> str:
    """The absolute output folder ``path`` after checking that it is a folder (or can be made: every existing part
    of its path is a folder) and that a file can be written in it (or in its nearest existing parent)."""
    if not path:
        raise error(empty)
    folder = os.path.abspath(path)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise error(f"{what} {folder!r} is a file, not a folder: choose a folder")
    probe = nearest_existing(folder)
    if not os.path.isdir(probe):
        raise error(f"{what} {folder!r} cannot be made: part of its path, {probe!r}, is a file, not a folder: "
                    f"choose another folder")
    reason = _probe_write(probe)
    if reason is not None:
        raise error(f"{what} {folder!r} cannot be written ({reason} in {probe!r}): choose a folder you can "
                    f"write to")
    return folder


def make_folder(folder: str, what: str = "Output folder", error: type[Exception] = OutputError) -> list:
    """Make ``folder`` and its missing parents; returns the folders made (deepest first), for ``remove_made``."""
    made = []
    probe = os.path.abspath(folder)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        made.append(probe)
        probe = os.path.dirname(probe)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        remove_made(made)
        raise error(f"Cannot create the {what.lower()} {folder!r} ({exc.strerror or exc}): choose a writable "
                    f"folder") from None
    return made


def write_text_files(folder: str, texts: dict) -> list:
    """Write ``{file name: text}`` into ``folder`` (made if missing) and return the paths. Every file is written
    next to its place first and only then moved over it, so a failure leaves the folder's files as they were."""
    os.makedirs(folder, exist_ok=True)
    done = []
    try:
        for name, text in texts.items():
            tmp = os.path.join(folder, name + ".tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                done.append(tmp)
                fh.write(text)
    except OSError:
        for tmp in done:
            if os.path.exists(tmp):
                os.remove(tmp)
        raise
    written = []
    for tmp in done:
        os.replace(tmp, tmp[:-4])
        written.append(tmp[:-4])
    return written


def remove_made(made: list) -> None:
    """Remove the folders ``make_folder`` made, as long as they are empty."""
    for path in made:
        try:
            os.rmdir(path)
        except OSError:
            break


# --- stale staging folders ---------------------------------------------------------------------------------

_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_ERROR_ACCESS_DENIED = 5
_STILL_ACTIVE = 259


def _windows_api():
    """(kernel32, get_last_error) through ctypes, Windows only (tests pass a fake on any system)."""
    # Windows only: not loaded elsewhere
    import ctypes
    from ctypes import wintypes  # (Windows only)

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # pyright: ignore[reportAttributeAccessIssue] -- Windows only: the checker reads ctypes as on Linux
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
    kernel32.GetExitCodeProcess.restype = wintypes.BOOL
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    return kernel32, ctypes.get_last_error  # pyright: ignore[reportAttributeAccessIssue] -- Windows only, as above


def _pid_running_windows(pid: int) -> bool:
    """Windows: open the process to ask for its exit code. (``os.kill(pid, 0)`` is no probe there: signal 0 is
    CTRL_C_EVENT, sent to the console process group, and would interrupt console programs.)"""
    import ctypes  # Windows only: not loaded elsewhere

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


def pid_running(pid: int) -> bool:
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


def _staging_pid(name: str) -> str | None:
    """The process id in a staging folder's name, '' when the name has none, None when it is no staging folder."""
    if name.startswith(STAGING_PREFIX):
        parts = name[len(STAGING_PREFIX):].split("-")
        return parts[1] if len(parts) > 1 else ""
    for prefix in LEGACY_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):].split("_", 1)[0]
    return None


def stale_folders(folder: str, prefixes: tuple | None = None) -> list:
    """The paths of the staging folders a killed bake left in ``folder``: named by EnvFX, older than this
    process, and not of a process still running. ``prefixes`` limits them to those names (default: all)."""
    stale = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return stale
    for entry in entries:
        if prefixes is not None and not entry.name.startswith(tuple(prefixes)):
            continue
        pid = _staging_pid(entry.name)
        if pid is None or not entry.is_dir(follow_symlinks=False):
            continue
        if pid.isdigit() and (int(pid) == os.getpid() or pid_running(int(pid))):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= _STARTED:
                continue
        except OSError:
            continue
        stale.append(entry.path)
    return stale


def remove_stale(folder: str, prefixes: tuple | None = None) -> list:
    """Remove the staging folders a killed bake left in ``folder`` (``stale_folders``); returns their names."""
    removed = []
    for path in stale_folders(folder, prefixes):
        try:
            shutil.rmtree(path)
        except OSError:
            continue
        removed.append(os.path.basename(path))
    return removed


def folder_bytes(path: str) -> int:
    total = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def free_bytes(folder: str) -> int:
    """Free space for a bake into ``folder``: the disk's free space plus the stale staging folders there (the bake
    removes them before it writes)."""
    free = shutil.disk_usage(nearest_existing(folder)).free
    if os.path.isdir(folder):
        free += sum(folder_bytes(path) for path in stale_folders(folder))
    return free


def check_disk_space(folder: str, need: int, what: str, advice: str,
                     error: type[Exception] = OutputError) -> int:
    """Refuse a bake of ``need`` bytes that would not fit in ``folder``; ``what`` describes the files, ``advice``
    what to do. Returns ``need``."""
    free = free_bytes(folder)
    if need > free:
        raise error(f"The bake would write up to {size_text(need)} ({what}) but only {size_text(free)} is free in "
                    f"{folder!r}: {advice}, or free disk space")
    return need


# --- staged writes -----------------------------------------------------------------------------------------

class Staging:
    """A staging folder inside the output folder ``folder`` (made, with its parents, if missing), for one bake of
    ``kind`` ("mips", "snow", "gasgiant", ...). Files written under ``path`` are moved into ``folder`` by
    ``commit()``; ``abort()``, or leaving a ``with`` block without committing, removes the staging folder and
    the folders made for it, so ``folder`` is left as it was. ``removed_stale`` names the leftovers of killed
    bakes that were cleaned up first."""

    def __init__(self, folder: str, kind: str, error: type[Exception] = OutputError, what: str = "Output folder"):
        self.folder = os.path.abspath(folder)
        self.error = error
        self.made = make_folder(self.folder, what, error)
        self.removed_stale = remove_stale(self.folder)
        try:
            self.path = tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{kind}-{os.getpid()}-", dir=self.folder)
        except OSError as exc:
            remove_made(self.made)
            raise error(f"{what} {self.folder!r} cannot be written ({exc.strerror or exc}): choose another "
                        f"folder") from None
        self.done = False

    def file(self, name: str) -> str:
        """Where to write the output file ``name`` (a path inside the staging folder; sub-folders are made)."""
        path = os.path.join(self.path, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def commit(self, names: Iterable[str] | None = None) -> list:
        """Move the staged files (``names``, or every file staged) into the output folder, replacing files of
        the same name; returns their final paths."""
        if names is None:
            names = sorted(os.path.relpath(os.path.join(root, n), self.path)
                           for root, _dirs, files in os.walk(self.path) for n in files)
        final = []
        for name in names:
            target = os.path.join(self.folder, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(os.path.join(self.path, name), target)
            final.append(target)
        shutil.rmtree(self.path, ignore_errors=True)
        self.done = True
        return final

    def abort(self) -> None:
        if not self.done:
            shutil.rmtree(self.path, ignore_errors=True)
            remove_made(self.made)
            self.done = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.abort()
        return False
