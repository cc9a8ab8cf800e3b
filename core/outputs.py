"""Where bakes write: output-folder checks, staged writes, cleanup of a killed bake's leftovers, disk space.

Every bake (gas giant, mips, snow buffer, light map, ...) writes the same way:

1. ``check_folder(path)`` before any work: the folder exists or can be made, and can really be written (a file is
   created and removed again: ``os.access`` says yes to root even on ``/proc``).
2. ``Staging(folder, kind)``: a temporary folder *inside* the output folder, named
   ``.envfx-staging-<kind>-<pid>-<random>``, receives every file; ``commit()`` moves them into place, and leaving
   the ``with`` block without committing (an error, a cancel) removes the folder and any output folder the bake
   created, so the folder is as it was.
3. A bake killed before it could clean up leaves its staging folder behind; the next bake into the same folder
   removes it (``remove_stale``) when it is sure the process that made it is gone. The folder's owner file
   (``OWNER_NAME``: host name, boot id and process-id namespace of the machine, process id and start time) tells:
   a folder made on this machine (same host, boot and namespace) is stale when its process is gone, or when the
   process id now names another process (another start time); a folder of another machine (shared farm storage:
   its process ids are not this machine's), or with no owner file (an older EnvFX, or a bake killed before it wrote
   it), is kept and reported, and removed only when nothing in it has changed for ``FOREIGN_MAX_AGE`` (7 days).
   Folders named by older EnvFX versions (``LEGACY_PREFIXES``) are recognised too.
4. ``check_disk_space(folder, need)`` refuses a bake whose files would not fit, counting stale staging folders as
   free space (they are removed first).

Errors are raised as ``error`` (each feature passes its own exception class, so its callers keep catching one
type); the messages say what is wrong and what to do.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterable

STAGING_PREFIX = ".envfx-staging-"
# staging folders of earlier EnvFX versions: the pid follows the prefix
LEGACY_PREFIXES = (".envfx_snow_", ".envfx_gasgiant_", ".envfx-mips-", ".envfx_lightmap_")
_STARTED = time.time()  # no staging folder of this process is older than this
OWNER_NAME = ".envfx-owner.json"  # in a staging folder: who made it (``owner``)
# a staging folder of another machine, or of unknown origin, is removed once nothing in it changed for this long
FOREIGN_MAX_AGE = 7 * 24 * 3600.0


class OutputError(ValueError):
    """An output folder that cannot be used (the message says what to do)."""


def size_text(n: int) -> str:
    """A byte count for messages: GB from 1 GiB up, MB from 1 MiB, KB below (a small bake is not "0.0 MB")."""
    if n >= 2**30:
        return f"{n / 2**30:,.2f} GB"
    return f"{n / 2**20:,.1f} MB" if n >= 2**20 else f"{n / 2**10:,.1f} KB"


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


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def machine() -> dict:
    """This machine as a staging folder's owner file records it: its host name, its boot id (Linux: a new one at
    each boot, so a process id of an earlier boot is not compared with this one's) and its process-id namespace
    (Linux: containers on one host with one host name count as machines of their own)."""
    namespace = ""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except (OSError, AttributeError):
        pass
    return {"host": socket.gethostname(), "boot": _read_text("/proc/sys/kernel/random/boot_id"),
            "namespace": namespace}


def process_start(pid: int) -> str:
    """When process ``pid`` started, as this machine counts (Linux: clock ticks since boot, /proc/PID/stat); '' where
    it cannot be told."""
    if os.name == "nt":
        return ""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def owner(pid: int | None = None) -> dict:
    """The owner file's record of process ``pid`` (default: this one) on this machine."""
    pid = os.getpid() if pid is None else pid
    return {**machine(), "pid": pid, "start": process_start(pid)}


def write_owner(path: str, pid: int | None = None) -> None:
    """Write the owner file of the staging folder ``path`` (made by process ``pid``, default this one)."""
    with open(os.path.join(path, OWNER_NAME), "w", encoding="utf-8") as fh:
        json.dump(owner(pid), fh)


def make_staging(folder: str, kind: str) -> str:
    """A new staging folder in ``folder`` (``.envfx-staging-<kind>-<pid>-<random>``) with its owner file; OSError when
    it cannot be made (nothing left behind)."""
    path = tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{kind}-{os.getpid()}-", dir=folder)
    try:
        write_owner(path)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path


def _newest_change(path: str) -> float:
    """The newest modification time of ``path`` and of everything in it."""
    newest = os.lstat(path).st_mtime
    for root, dirs, names in os.walk(path):
        for name in dirs + names:
            try:
                newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
            except OSError:
                pass
    return newest


def judge(path: str, pid: str) -> tuple:
    """(stale, why kept) of the staging folder ``path`` whose name holds ``pid``: stale when made on this machine by
    a process that is gone (or whose id now names a process started at another time), or when of another machine or
    of unknown origin and unchanged for ``FOREIGN_MAX_AGE``; else why it is kept ('' for a live process here)."""
    try:
        with open(os.path.join(path, OWNER_NAME), encoding="utf-8") as fh:
            made = json.load(fh)
        if not isinstance(made, dict):
            raise ValueError("not a record")
    except (OSError, ValueError):
        made = None
    if made is not None and all(made.get(k) == v for k, v in machine().items()):
        try:
            number = int(made.get("pid", -1))
        except (TypeError, ValueError):
            number = -1
        if number == os.getpid():
            return False, ""
        if number < 0 or not pid_running(number):
            return True, ""
        start = process_start(number)
        return (bool(start and made.get("start") and start != made.get("start"))), ""
    try:
        age = time.time() - _newest_change(path)
    except OSError:
        return False, ""
    if age > FOREIGN_MAX_AGE:
        return True, ""
    if made is None:
        why = "no owner file (made by an older EnvFX, or its bake was killed at its start)"
    else:
        why = f"made on another machine ({made.get('host', '?')}, process {made.get('pid', pid or '?')})"
    return False, (f"{why}, last changed {age / 3600:.1f} h ago: its task may still be running there; it is removed "
                   f"once unchanged for {FOREIGN_MAX_AGE / 86400:g} days, or remove it by hand once that task ended")


def staging_folders(folder: str, prefixes: tuple | None = None) -> list:
    """[(path, stale, why kept)] of the staging folders in ``folder`` that are not this process's own (``judge``),
    older than this process. ``prefixes`` limits them to those names (default: all)."""
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for entry in entries:
        if prefixes is not None and not entry.name.startswith(tuple(prefixes)):
            continue
        pid = _staging_pid(entry.name)
        if pid is None or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= _STARTED:
                continue
        except OSError:
            continue
        stale, why = judge(entry.path, pid)
        if stale or why:
            found.append((entry.path, stale, why))
    return found


def stale_folders(folder: str, prefixes: tuple | None = None) -> list:
    """The paths of the staging folders a killed bake left in ``folder`` (``staging_folders``: made here by a process
    that is gone, or of another machine and unchanged for ``FOREIGN_MAX_AGE``). ``prefixes`` limits them to those
    names (default: all)."""
    return [path for path, stale, _why in staging_folders(folder, prefixes) if stale]


_REPORTED: set = set()


def report_kept(path: str, why: str) -> None:
    """Say once per process on stderr that the staging folder ``path`` is kept, and why (a farm task's log)."""
    if path not in _REPORTED:
        _REPORTED.add(path)
        print(f"envfx: note: staging folder {path!r} kept: {why}", file=sys.stderr)


def remove_stale(folder: str, prefixes: tuple | None = None,
                 report: Callable[[str, str], None] | None = report_kept) -> list:
    """Remove the staging folders a killed bake left in ``folder`` (``stale_folders``); returns their names. Those
    kept that may be another machine's are passed to ``report(path, why)`` (default: a note on stderr)."""
    removed = []
    for path, stale, why in staging_folders(folder, prefixes):
        if not stale:
            if report is not None:
                report(path, why)
            continue
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
            self.path = make_staging(self.folder, kind)
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
        """Move the staged files (``names``, or every file staged; never the owner file) into the output folder,
        replacing files of the same name; returns their final paths."""
        if names is None:
            names = sorted(os.path.relpath(os.path.join(root, n), self.path)
                           for root, _dirs, files in os.walk(self.path) for n in files)
        names = [n for n in names if n != OWNER_NAME]  # (the staging folder's, not the bake's)
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
