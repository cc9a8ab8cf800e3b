"""Saved .blend files made byte-stable: the fields Blender writes from one session's counters, zeroed (no bpy).

A .blend file (uncompressed) is a header, then blocks, each a block header (``BHead``) and its data, then ``ENDB``.
The ``DNA1`` block holds the SDNA: the names, types, type sizes and struct layouts of everything written, so a
field's place in a block is read from the file itself, whatever the Blender version:

* header, format 0 (Blender up to 4.x): ``BLENDER`` + ``-`` (8-byte pointers) or ``_`` (4) + ``v``/``V`` (little/
  big endian) + 3 version digits; block headers are ``code len old SDNAnr nr`` (``old`` as wide as a pointer);
* header, format 1 (Blender 5.0 on): ``BLENDER17-01v`` + 4 version digits; block headers are ``code SDNAnr old len
  nr`` (int32, int32, uint64, int64, int64), little endian;
* SDNA: ``SDNA``, ``NAME`` count + names, ``TYPE`` count + type names, ``TLEN`` type sizes (int16), ``STRC`` count +
  structs (type, field count, then type and name per field; int16 each), every section padded to 4 bytes (5.0
  writes the field counts and names the same way).

``ID.session_uid`` is the one runtime-only field found to differ between two saves of the same scene (compared byte
for byte, Blender 4.2 and 5.0): a number counted up for each datablock created in the session, written as it is,
and set anew on load (readfile's ``BKE_lib_libblock_session_uid_renew`` for every ID read), so the value in the file
is never read. ``normalise_file`` zeroes it in every ID of the file, so the same scene saved by any session is the
same bytes. Compressed files (zstd, gzip) are left alone: ``is_compressed`` tells.

Blender up to 4.x also writes each block's memory address as its identifier and every pointer as an address:
``renumber_addresses`` numbers the blocks in file order and every pointer with them (``normalised`` does it), so a
4.2 file is the same bytes whichever session saved it.
"""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass

import numpy as np

# (struct, field): fields of saved datablocks that hold one session's counters and are set anew when a file is read
# (the window manager's timers: a runtime list, which one session has and another not; reading a file clears it)
RUNTIME_FIELDS = (("ID", "session_uid"), ("wmWindowManager", "timers"))
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"


class BlendFileError(ValueError):
    """Not a .blend file this reader understands (the message says why)."""


@dataclass(frozen=True)
class Field:
    type: str
    name: str      # as in the SDNA: "*next", "name[66]", "session_uid"
    offset: int
    size: int

    @property
    def bare(self) -> str:
        """The field's name without pointer stars, function-pointer parentheses or array sizes."""
        return self.name.lstrip("(*").split("[", 1)[0].split(")", 1)[0]


@dataclass(frozen=True)
class Block:
    code: bytes
    sdna: int
    old: int
    nr: int
    start: int      # offset of the block's data in the file
    length: int


@dataclass
class Layout:
    """What the reader needs of a file: its byte order, pointer size, blocks and SDNA structs."""
    endian: str                  # "<" or ">"
    pointer: int                 # 4 or 8
    blocks: list                 # [Block]
    structs: list                # [(type name, size, [Field])], by SDNA index
    fmt: int = 0                 # header format: 0 (Blender up to 4.x), 1 (5.0 on)
    bhead_size: int = 0          # bytes of a block header

    def struct_index(self, name: str) -> int | None:
        for i, (type_name, _size, _fields) in enumerate(self.structs):
            if type_name == name:
                return i
        return None

    def field(self, struct_name: str, field_name: str) -> Field | None:
        i = self.struct_index(struct_name)
        if i is None:
            return None
        return next((f for f in self.structs[i][2] if f.bare == field_name), None)

    def embedded(self, struct_name: str) -> dict:
        """{SDNA index: offset of ``struct_name`` in it} for every struct that starts with ``struct_name`` as its first
        field (every datablock starts with its ``ID id``), ``struct_name`` itself at 0."""
        found = {}
        for i, (type_name, _size, fields) in enumerate(self.structs):
            if type_name == struct_name:
                found[i] = 0
            elif fields and fields[0].type == struct_name and fields[0].offset == 0 and "*" not in fields[0].name:
                found[i] = 0
        return found


def is_compressed(data: bytes) -> bool:
    return data[:4] == ZSTD_MAGIC or data[:2] == GZIP_MAGIC


def _pad4(n: int) -> int:
    return (n + 3) & ~3


def _header(data: bytes) -> tuple:
    """(header size, format, pointer size, endian) of a .blend file's first bytes."""
    if data[:7] != b"BLENDER":
        if is_compressed(data):
            raise BlendFileError("the file is compressed: save it without compression to compare its bytes")
        raise BlendFileError("not a .blend file (it does not start with BLENDER)")
    if data[7:8] in (b"-", b"_"):
        if data[8:9] not in (b"v", b"V"):
            raise BlendFileError(f"unknown byte order mark {data[8:9]!r} in the .blend header")
        return 12, 0, 8 if data[7:8] == b"-" else 4, "<" if data[8:9] == b"v" else ">"
    if data[7:9] == b"17" and data[9:10] == b"-" and data[10:12] == b"01" and data[12:13] == b"v":
        return 17, 1, 8, "<"
    raise BlendFileError(f"unknown .blend header {data[:17]!r}: saved by a Blender this reader does not know")


def _bhead(fmt: int, pointer: int, endian: str) -> tuple:
    """(struct, field order) of a block header: the order maps the unpacked values to code, len, old, SDNAnr, nr."""
    if fmt == 1:
        return struct.Struct(endian + "4siQqq"), ("code", "sdna", "old", "len", "nr")
    return struct.Struct(endian + ("4siIii" if pointer == 4 else "4siQii")), ("code", "len", "old", "sdna", "nr")


def _sdna(data: bytes, start: int, end: int, endian: str, pointer: int) -> list:
    """The structs of the SDNA block at ``data[start:end]``: [(type name, size, [Field])]."""
    pos = start

    def expect(tag):
        nonlocal pos
        if data[pos:pos + 4] != tag:
            raise BlendFileError(f"the SDNA has no {tag.decode()} section where expected: the file is damaged")
        pos += 4

    def count():
        nonlocal pos
        (n,) = struct.unpack_from(endian + "i", data, pos)
        pos += 4
        return n

    def strings(n):
        nonlocal pos
        out = []
        for _ in range(n):
            stop = data.index(b"\0", pos, end)
            out.append(data[pos:stop].decode("latin-1"))
            pos = stop + 1
        pos = start + _pad4(pos - start)
        return out

    expect(b"SDNA")
    expect(b"NAME")
    names = strings(count())
    expect(b"TYPE")
    types = strings(count())
    expect(b"TLEN")
    sizes = struct.unpack_from(f"{endian}{len(types)}h", data, pos)
    sizes = [s & 0xFFFF for s in sizes]
    pos = start + _pad4(pos + 2 * len(types) - start)
    expect(b"STRC")
    structs = []
    for _ in range(count()):
        type_index, n = struct.unpack_from(endian + "2h", data, pos)
        pos += 4
        pairs = struct.unpack_from(f"{endian}{2 * n}h", data, pos)
        pos += 4 * n
        fields, offset = [], 0
        for k in range(n):
            ftype, fname = types[pairs[2 * k]], names[pairs[2 * k + 1]]
            size = _field_size(fname, sizes[pairs[2 * k]], pointer)
            fields.append(Field(ftype, fname, offset, size))
            offset += size
        structs.append((types[type_index], sizes[type_index], fields))
    return structs


def _field_size(name: str, type_size: int, pointer: int) -> int:
    """A field's size from its SDNA name: pointers (``*x``, ``(*f)()``) are pointer-sized, arrays multiply."""
    base = pointer if name.startswith("*") or name.startswith("(*") else type_size
    count = 1
    for part in name.split("[")[1:]:
        count *= int(part.split("]", 1)[0])
    return base * count


def layout(data: bytes) -> Layout:
    """The blocks and SDNA of an uncompressed .blend file's bytes; BlendFileError if it cannot be read."""
    head, fmt, pointer, endian = _header(data)
    bhead, order = _bhead(fmt, pointer, endian)
    blocks, pos, dna = [], head, None
    while True:
        if pos + bhead.size > len(data):
            raise BlendFileError("the file ends inside a block header (no ENDB block): it is truncated")
        values = dict(zip(order, bhead.unpack_from(data, pos)))
        start = pos + bhead.size
        if values["code"] == b"ENDB":
            break
        if values["len"] < 0 or start + values["len"] > len(data):
            raise BlendFileError(f"a {values['code']!r} block runs past the end of the file: it is truncated")
        block = Block(values["code"], values["sdna"], values["old"], values["nr"], start, values["len"])
        blocks.append(block)
        if block.code == b"DNA1":
            dna = block
        pos = start + values["len"]
    if dna is None:
        raise BlendFileError("the file has no DNA1 block (its struct layouts): it is damaged")
    return Layout(endian, pointer, blocks, _sdna(data, dna.start, dna.start + dna.length, endian, pointer), fmt,
                  bhead.size)


def _struct_elements(lay: Layout, struct_name: str):
    """(offset of each element, struct size) of every block of ``struct_name`` or of a struct that starts with it
    (every ID datablock starts with ``ID id``; an embedded node tree's DATA block too)."""
    owners = lay.embedded(struct_name)
    for block in lay.blocks:
        if block.code == b"DNA1" or block.sdna not in owners:
            continue
        size = lay.structs[block.sdna][1]
        if size * block.nr > block.length:
            raise BlendFileError(f"a {block.code!r} block is shorter than its structs: the file is damaged")
        for k in range(block.nr):
            yield block.start + k * size + owners[block.sdna]


def runtime_spans(data: bytes, fields=RUNTIME_FIELDS, lay: Layout | None = None) -> list:
    """[(offset, size)] of every runtime-only field (``fields``: (struct, field) pairs) in the file's blocks, in every
    element of every block of that struct or of a struct that starts with it."""
    lay = lay or layout(data)
    spans = []
    for struct_name, field_name in fields:
        found = lay.field(struct_name, field_name)
        if found is None:
            continue
        spans += [(at + found.offset, found.size) for at in _struct_elements(lay, struct_name)]
    return sorted(spans)


def _global_spans(data: bytes, lay: Layout) -> list:
    """[(offset, size)] of the bytes of the file's ``FileGlobal`` that hold whatever was in memory: its padding
    (``_pad*``) and what follows the end of its strings (Blender 5.0 copies the colour space name into a buffer it
    does not clear, so the bytes after the name's NUL are a stack's leftovers)."""
    spans = []
    index = lay.struct_index("FileGlobal")
    if index is None:  # no such struct: no such block either
        return spans
    for at in _struct_elements(lay, "FileGlobal"):
        for f in lay.structs[index][2]:
            start = at + f.offset
            if f.bare.startswith("_pad"):
                spans.append((start, f.size))
            elif f.type == "char" and "[" in f.name and "*" not in f.name:
                end = data.find(b"\0", start, start + f.size)
                if end != -1:
                    spans.append((end, start + f.size - end))
    return spans


def _edge_swaps(data: bytes, lay: Layout) -> list:
    """[(offset of v1, offset of v2, pointer size)] of the screen edges (``ScrEdge``) whose two vertices are written
    in descending order of their file addresses. Blender sorts an edge's vertices by their address in memory, which
    depends on the session's allocations; reading a file sorts them again (``BKE_screen_sort_scrvert`` after the
    pointers are restored), so their order in the file is never read."""
    v1, v2 = lay.field("ScrEdge", "v1"), lay.field("ScrEdge", "v2")
    if v1 is None or v2 is None or v1.size != lay.pointer or v2.size != lay.pointer:
        return []
    fmt = lay.endian + ("Q" if lay.pointer == 8 else "I")
    swaps = []
    for at in _struct_elements(lay, "ScrEdge"):
        (a,), (b,) = struct.unpack_from(fmt, data, at + v1.offset), struct.unpack_from(fmt, data, at + v2.offset)
        if a > b:
            swaps.append((at + v1.offset, at + v2.offset, lay.pointer))
    return swaps


# --- old addresses (Blender up to 4.x) ----------------------------------------------------------------------

# the numbers old addresses become: blocks' in file order from BLOCK_BASE; an address of no block in the file
# (memory that was not written: runtime data, or what a pointer left from an earlier file named) becomes
# OTHER_ADDRESS, apart from them, so that it finds no block, as before
BLOCK_BASE = 0x100000000000
OTHER_ADDRESS = 0x700000000000
ADDRESS_STEP = 16


class UnsafeRenumbering(BlendFileError):
    """A block of the file may hold addresses that the renumbering does not know to be pointers."""


def _pointer_offsets(lay: Layout, index: int, memo: dict) -> tuple:
    """(offsets of every pointer, offsets of the pointers to arrays of pointers: ``**`` fields, offsets of the
    pointers to strings: ``char *`` fields) in one element of the SDNA struct ``index``, with the structs it embeds
    (by value) flattened."""
    if index in memo:
        return memo[index]
    if "names" not in memo:
        memo["names"] = {name: i for i, (name, _s, _f) in enumerate(lay.structs)}
    by_name = memo["names"]
    pointers, arrays, strings = [], [], []
    for f in lay.structs[index][2]:
        count = 1
        for part in f.name.split("[")[1:]:
            count *= int(part.split("]", 1)[0])
        if f.name.startswith("*") or f.name.startswith("(*"):
            at = [f.offset + k * lay.pointer for k in range(count)]
            pointers += at
            if f.name.startswith("**"):
                arrays += at
            elif f.type == "char" and f.name.startswith("*"):
                strings += at
        elif f.type in by_name and count and f.size:
            inner = _pointer_offsets(lay, by_name[f.type], memo)
            step = f.size // count
            for k in range(count):
                for mine, theirs in zip((pointers, arrays, strings), inner):
                    mine += [f.offset + k * step + o for o in theirs]
    memo[index] = (pointers, arrays, strings)
    return memo[index]


def _string_tails(data: bytes, lay: Layout) -> list:
    """[(offset, size)] of the bytes after the end of each string that a ``char *`` field names (a raw block):
    Blender writes a string's whole allocation, which can be a few bytes longer than the string and its NUL, and
    those bytes are whatever was in memory (a mesh's colour attribute names). Only a NUL within the block's last 8
    bytes counts (an allocation's rounding), so a buffer that is not a string is left alone."""
    raw = {b.old: b for b in lay.blocks if b.sdna == 0 and b.code == b"DATA"}
    fmt = lay.endian + ("Q" if lay.pointer == 8 else "I")
    memo: dict = {}
    spans, done = [], set()
    for b in lay.blocks:
        if b.code == b"DNA1" or b.sdna == 0:
            continue
        strings = _pointer_offsets(lay, b.sdna, memo)[2]
        if not strings:
            continue
        size = lay.structs[b.sdna][1]
        for k in range(min(b.nr, b.length // size) if size else 0):
            for o in strings:
                (target,) = struct.unpack_from(fmt, data, b.start + k * size + o)
                found = raw.get(target) if target else None
                if found is None or target in done:
                    continue
                done.add(target)
                end = data.find(b"\0", found.start, found.start + found.length)
                if end != -1 and found.start + found.length - end <= 8:
                    spans.append((end, found.start + found.length - end))
    return spans


def _words(buf: np.ndarray, positions: np.ndarray, endian: str) -> np.ndarray:
    """The 64-bit words at byte ``positions`` of ``buf`` (uint8), aligned or not."""
    if not positions.size:
        return np.zeros(0, np.uint64)
    raw = buf[positions[:, None] + np.arange(8)]
    return np.ascontiguousarray(raw).view(endian + "u8").reshape(-1).astype(np.uint64)


def renumber_addresses(data: bytes, lay: Layout | None = None) -> bytes:
    """``data`` (a .blend file of Blender up to 4.x, 64-bit) with its memory addresses replaced by numbers that do
    not depend on the session: each block's ``old`` address (the one a pointer to it holds) becomes its place in
    the file, and every pointer to it that number, so two sessions' saves of one scene are the same bytes.

    Blender up to 4.x writes each block's address in memory as its identifier, and every pointer as the address it
    holds; reading a file maps these old addresses to the new blocks by equality only (the loader's old-to-new
    map), so any numbering that keeps which pointers name which block reads back the same. The pointers are found
    from the file's SDNA: every pointer field of every struct element of every block (with the structs embedded in
    it), and the elements of the raw arrays of pointers that a ``**`` field names (``Mesh.mat``, a node panel's
    items). A pointer to an address that is no block of the file (runtime data that was not written, which the
    reader makes NULL or replaces) becomes one number apart from the blocks' (still not NULL, still naming no
    block): its value depends on what the session allocated before, files it opened included.

    Raises UnsafeRenumbering when a raw block the SDNA does not type holds a word equal to a block's address (a
    pointer array the renumbering would miss): the caller keeps the file as it is. Files of format 1 (5.0 on, which
    writes stable identifiers) and 32-bit files are returned as they are."""
    lay = lay or layout(data)
    if lay.fmt != 0 or lay.pointer != 8:
        return data
    buf = np.frombuffer(data, np.uint8)
    blocks = lay.blocks
    old_at = 8  # a format 0 block header: code (4), len (4), old
    headers = np.array([b.start - lay.bhead_size + old_at for b in blocks], np.int64)
    olds = _words(buf, headers, lay.endian)
    # each old address's number: its first block's place in the file
    uniq, first = np.unique(olds, return_index=True)
    keep = uniq != 0
    uniq, first = uniq[keep], first[keep]
    block_new = BLOCK_BASE + ADDRESS_STEP * np.argsort(np.argsort(first)).astype(np.uint64)
    # every pointer: struct elements' fields, then the raw pointer arrays those ``**`` fields name
    memo: dict = {}
    positions, array_targets = [], []
    raw = {}
    for b in blocks:
        if b.code == b"DNA1":  # (the struct layouts: names and numbers, no pointers)
            continue
        if b.sdna == 0:  # raw data (no struct): typed only by the field that points to it
            raw[b.old] = b
            continue
        size = lay.structs[b.sdna][1]
        pointers, arrays, _strings = _pointer_offsets(lay, b.sdna, memo)
        if size * b.nr > b.length:
            raise BlendFileError(f"a {b.code!r} block is shorter than its structs: the file is damaged")
        if not pointers:
            continue
        starts = b.start + size * np.arange(b.nr, dtype=np.int64)[:, None]
        positions.append((starts + np.array(pointers, np.int64)[None, :]).ravel())
        if arrays:
            array_targets.append((starts + np.array(arrays, np.int64)[None, :]).ravel())
    targets = _words(buf, np.concatenate(array_targets), lay.endian) if array_targets else np.zeros(0, np.uint64)
    arrays_done = set()
    for target in dict.fromkeys(int(t) for t in targets if t):
        b = raw.get(target)
        if b is None or target in arrays_done:
            continue
        arrays_done.add(target)
        positions.append(b.start + 8 * np.arange(b.length // 8, dtype=np.int64))
    # a raw block that no ``**`` field names, holding a block's address: a pointer array not known: refuse
    for old, b in raw.items():
        if old in arrays_done or b.length < 8:
            continue
        for shift in range(0, 8, 4):  # (raw arrays of 4-byte values may put a pointer at any 4-byte offset)
            n = (b.length - shift) // 8
            words = np.frombuffer(data, lay.endian + "u8", n, b.start + shift)
            hits = np.isin(words, uniq)
            if hits.any():
                raise UnsafeRenumbering(f"a raw {b.code!r} block holds the address of a block "
                                        f"({int(words[hits][0]):#x}) that no pointer field names: kept as saved")
    positions = np.concatenate(positions) if positions else np.zeros(0, np.int64)
    values = _words(buf, positions, lay.endian)
    new = np.zeros(len(values), np.uint64)
    where = np.searchsorted(uniq, values)
    where_c = np.minimum(where, max(len(uniq) - 1, 0))
    in_file = (values != 0) & (len(uniq) > 0) & (uniq[where_c] == values if len(uniq) else False)
    new[in_file] = block_new[where_c[in_file]]
    new[(values != 0) & ~in_file] = OTHER_ADDRESS
    out = np.frombuffer(bytearray(data), np.uint8).copy()
    head_new = np.zeros(len(olds), np.uint64)
    nz = olds != 0
    head_new[nz] = block_new[np.searchsorted(uniq, olds[nz])]
    for at, value in ((headers, head_new), (positions, new)):
        if at.size:
            out[at[:, None] + np.arange(8)] = value.astype(lay.endian + "u8").view(np.uint8).reshape(-1, 8)
    return out.tobytes()


def normalised(data: bytes, fields=RUNTIME_FIELDS) -> bytes:
    """``data`` (an uncompressed .blend file's bytes) as the same scene saved by any session: every runtime-only
    field zeroed (``fields``), ``FileGlobal``'s leftover bytes zeroed, memory addresses renumbered (Blender up to
    4.x: ``renumber_addresses``; kept as saved where that is not safe), screen edges' vertices in ascending order.
    Compressed files are returned as they are."""
    if is_compressed(data):
        return data
    lay = layout(data)
    spans = runtime_spans(data, fields, lay) + _global_spans(data, lay) + _string_tails(data, lay)
    try:
        data = renumber_addresses(data, lay)
    except UnsafeRenumbering:
        pass
    out = bytearray(data)
    for offset, size in spans:
        out[offset:offset + size] = bytes(size)
    for a, b, size in _edge_swaps(data, lay):
        out[a:a + size], out[b:b + size] = data[b:b + size], data[a:a + size]
    return bytes(out)


def normalise_file(path: str, fields=RUNTIME_FIELDS) -> bool:
    """Zero the runtime-only fields of the .blend file ``path`` in place, whole or not at all (a temporary file
    beside it, renamed over it, keeping its permissions). Returns whether the file changed (False for a file already
    normalised or compressed)."""
    with open(path, "rb") as fh:
        data = fh.read()
    new = normalised(data, fields)
    if new == data:
        return False
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".envfx-", suffix=".blend.tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(new)
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return True
