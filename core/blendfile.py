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

Node identifiers and nested node reference ids are drawn from a clock-seeded generator when a node is made:
``renumber_nodes`` numbers them in file order with every field that names them (docs/farm.md lists the fields).
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
# fields Blender seeds from the clock when it makes the datablock, read back as they are: zeroed (a mesh's face-set
# colour seed, which only picks the colours the face sets are shown in)
CLOCK_FIELDS = (("Mesh", "face_sets_color_seed"),)
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


def runtime_spans(data: bytes, fields: tuple = RUNTIME_FIELDS, lay: Layout | None = None) -> list:
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
    holds; reading a file maps these old addresses to the new blocks by equality only, so any numbering that keeps
    which pointers name which block reads back the same. The reader looks a data pointer up among the blocks of its
    own datablock (an ID block and the DATA blocks after it: readfile's data map, cleared after each ID) and an ID
    pointer among the ID blocks; two blocks of one file can have one address (memory freed and used again while the
    file was written, in two datablocks), so a pointer names the block of its address in its own datablock, else the
    ID block of that address, else the one DATA block of the file with it. The pointers are found from the file's
    SDNA: every pointer field of every struct element of every block (with the structs embedded in it), and the
    elements of the raw arrays of pointers that a ``**`` field names (``Mesh.mat``, a node panel's items). A pointer
    to an address that is no block of the file (runtime data that was not written, which the reader makes NULL or
    replaces) becomes one number apart from the blocks' (still not NULL, still naming no block).

    Raises UnsafeRenumbering when a raw block the SDNA does not type holds a word equal to a block's address (a
    pointer array the renumbering would miss), or a pointer's block is ambiguous (two blocks of its address in one
    datablock, or in two others): the caller keeps the file as it is. Files of format 1 (5.0 on, which writes stable
    identifiers) and 32-bit files are returned as they are."""
    lay = lay or layout(data)
    if lay.fmt != 0 or lay.pointer != 8:
        return data
    buf = np.frombuffer(data, np.uint8)
    blocks = lay.blocks
    old_at = 8  # a format 0 block header: code (4), len (4), old
    headers = np.array([b.start - lay.bhead_size + old_at for b in blocks], np.int64)
    olds = _words(buf, headers, lay.endian)
    # each block's own number (its place in the file), the datablock it belongs to (its ID block: the last block
    # before it that is no DATA block), and where a pointer's address finds its block
    head_new = np.zeros(len(blocks), np.uint64)
    scope = np.zeros(len(blocks), np.int64)
    in_scope: dict = {}      # (scope, address) -> block index (None: two in one datablock)
    ids: dict = {}           # address -> ID block index (None: two)
    anywhere: dict = {}      # address -> DATA block index (None: two)
    current, number = -1, 0
    for i, (b, old) in enumerate(zip(blocks, olds.tolist())):
        if b.code != b"DATA":
            current = i
        scope[i] = current
        if not old:
            continue
        head_new[i] = BLOCK_BASE + ADDRESS_STEP * number
        number += 1
        if b.code == b"DATA":
            in_scope[(current, old)] = None if (current, old) in in_scope else i
            anywhere[old] = None if old in anywhere else i
        else:
            ids[old] = None if old in ids else i
    addresses = np.array(sorted(set(olds.tolist()) - {0}), np.uint64)
    # every pointer: struct elements' fields, then the raw pointer arrays those ``**`` fields name
    memo: dict = {}
    positions, owners, array_targets, array_owners = [], [], [], []
    raw = {}
    for i, b in enumerate(blocks):
        if b.code == b"DNA1":  # (the struct layouts: names and numbers, no pointers)
            continue
        if b.sdna == 0:  # raw data (no struct): typed only by the field that points to it
            raw.setdefault((int(scope[i]), b.old), b)
            raw.setdefault((-2, b.old), b)
            continue
        size = lay.structs[b.sdna][1]
        pointers, arrays, _strings = _pointer_offsets(lay, b.sdna, memo)
        if size * b.nr > b.length:
            raise BlendFileError(f"a {b.code!r} block is shorter than its structs: the file is damaged")
        if not pointers:
            continue
        starts = b.start + size * np.arange(b.nr, dtype=np.int64)[:, None]
        at = (starts + np.array(pointers, np.int64)[None, :]).ravel()
        positions.append(at)
        owners.append(np.full(len(at), scope[i], np.int64))
        if arrays:
            at = (starts + np.array(arrays, np.int64)[None, :]).ravel()
            array_targets.append(at)
            array_owners.append(np.full(len(at), scope[i], np.int64))
    targets = _words(buf, np.concatenate(array_targets), lay.endian) if array_targets else np.zeros(0, np.uint64)
    target_scopes = np.concatenate(array_owners) if array_owners else np.zeros(0, np.int64)
    arrays_done = set()
    for target, where in dict.fromkeys(zip(targets.tolist(), target_scopes.tolist())):
        b = raw.get((where, target)) or raw.get((-2, target)) if target else None
        if b is None or b.start in arrays_done:
            continue
        arrays_done.add(b.start)
        at = b.start + 8 * np.arange(b.length // 8, dtype=np.int64)
        positions.append(at)
        owners.append(np.full(len(at), where, np.int64))
    # a raw block that no ``**`` field names, holding a block's address: a pointer array not known: refuse
    for b in {id(b): b for b in raw.values()}.values():
        if b.start in arrays_done or b.length < 8:
            continue
        for shift in range(0, 8, 4):  # (raw arrays of 4-byte values may put a pointer at any 4-byte offset)
            n = (b.length - shift) // 8
            words = np.frombuffer(data, lay.endian + "u8", n, b.start + shift)
            hits = np.isin(words, addresses)
            if hits.any():
                raise UnsafeRenumbering(f"a raw {b.code!r} block holds the address of a block "
                                        f"({int(words[hits][0]):#x}) that no pointer field names: kept as saved")
    positions = np.concatenate(positions) if positions else np.zeros(0, np.int64)
    owner_scopes = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    values = _words(buf, positions, lay.endian)
    new = np.zeros(len(values), np.uint64)
    found: dict = {}
    for k, (value, where) in enumerate(zip(values.tolist(), owner_scopes.tolist())):
        if not value:
            continue
        key = (where, value)
        if key not in found:
            index = in_scope.get(key, -1)
            if index == -1:
                index = ids.get(value, -1)
            if index == -1:
                index = anywhere.get(value, -1)
            if index is None:
                raise UnsafeRenumbering(f"a pointer names address {value:#x}, which two blocks have: kept as saved")
            found[key] = OTHER_ADDRESS if index == -1 else int(head_new[index])
        new[k] = found[key]
    out = np.frombuffer(bytearray(data), np.uint8).copy()
    for at, value in ((headers, head_new), (positions, new)):
        if at.size:
            out[at[:, None] + np.arange(8)] = value.astype(lay.endian + "u8").view(np.uint8).reshape(-1, 8)
    return out.tobytes()


# a mesh's layers (Blender up to 4.x: CustomData) of one byte an element: CD_PROP_INT8, CD_PROP_BOOL
ONE_BYTE_LAYERS = (45, 50)
# (CustomData field of Mesh, its element count field), as named by Blender up to 4.2 and after
MESH_LAYERS = (("vdata", "totvert"), ("edata", "totedge"), ("pdata", "totpoly"), ("ldata", "totloop"),
               ("fdata", "totface"), ("vert_data", "verts_num"), ("edge_data", "edges_num"),
               ("face_data", "faces_num"), ("corner_data", "corners_num"))


def _layer_tails(data: bytes, lay: Layout) -> list:
    """[(offset, size)] of the bytes after the end of a mesh's one-byte layers (booleans: selection, sharp faces):
    Blender 4.2 writes a boolean array rounded up to 4 bytes, and the bytes past its last element are whatever was
    in memory. The element count is the mesh's (its vertices, edges, faces, corners)."""
    r = _Reader(data, lay)
    mesh, layer = r.names.get("Mesh"), r.names.get("CustomDataLayer")
    if mesh is None or layer is None:
        return []
    f_type, f_data = r.field("CustomDataLayer", "type"), r.field("CustomDataLayer", "data")
    layer_size = lay.structs[layer][1]
    spans = []
    for b in lay.blocks:
        if b.sdna != mesh:
            continue
        for data_name, count_name in MESH_LAYERS:
            f_layers, f_count = r.field("Mesh", f"{data_name}.layers"), r.field("Mesh", count_name)
            f_total = r.field("Mesh", f"{data_name}.totlayer")
            if f_layers is None or f_count is None:
                continue
            count = r.int(b.start, f_count)
            lb = r.block(r.pointer(b.start, f_layers), "CustomDataLayer")
            if lb is None:
                continue
            for k in range(min(r.int(b.start, f_total, lb.nr), lb.nr)):
                at = lb.start + k * layer_size
                if r.int(at, f_type) not in ONE_BYTE_LAYERS:
                    continue
                raw = r.block(r.pointer(at, f_data))
                if raw is not None and raw.sdna == 0 and 0 < raw.length - count < 4:
                    spans.append((raw.start + count, raw.length - count))
    return spans


IDP_STRING = 0  # an ID property's type: a string, ``len`` bytes with its NUL


def _idprop_string_tails(data: bytes, lay: Layout) -> list:
    """[(offset, size)] of the bytes after the end of each string ID property (``len`` bytes with its NUL; a raw
    block that Blender 4.2 rounds up to 4 bytes, the rest being whatever was in memory)."""
    r = _Reader(data, lay)
    index = r.names.get("IDProperty")
    f_type, f_len, f_data = (r.field("IDProperty", name) for name in ("type", "len", "data.pointer"))
    if index is None or f_type is None or f_len is None or f_data is None:
        return []
    size = lay.structs[index][1]
    spans = []
    for b in lay.blocks:
        if b.sdna != index:
            continue
        for k in range(min(b.nr, b.length // size) if size else 0):
            at = b.start + k * size
            if r.int(at, f_type) != IDP_STRING:
                continue
            raw = r.block(r.pointer(at, f_data))
            length = r.int(at, f_len)
            if raw is not None and raw.sdna == 0 and 0 < raw.length - length < 4 and length > 0:
                spans.append((raw.start + length, raw.length - length))
    return spans


# --- node identifiers ----------------------------------------------------------------------------------------

# a nodes modifier's bake target (DNA: NodesModifierBakeTarget): a bake on disk lies in a folder named by its id
BAKE_TARGET_INHERIT, BAKE_TARGET_DISK = 0, 2
# fields holding a node's identifier, found by name in the SDNA: a node storage's ``output_node_id`` (the zones' input
# nodes: simulation, repeat, for-each element, closure), a nested reference's ``path.node_id``, and those of structs
# the renumbering does not map (the viewer paths' elements): a file holding one keeps its node identifiers as saved
NODE_ID_SUFFIX = "node_id"


class _Reader:
    """Typed reads of one file's bytes through its layout: fields by name (embedded structs flattened with dots),
    pointers, the blocks by their old address."""

    def __init__(self, data: bytes, lay: Layout):
        self.data, self.lay = data, lay
        self.ptr = lay.endian + ("Q" if lay.pointer == 8 else "I")
        self.by_old: dict[int, Block] = {}
        for b in lay.blocks:
            if b.code != b"DNA1" and b.old:
                self.by_old.setdefault(b.old, b)
        self.names = {name: i for i, (name, _s, _f) in enumerate(lay.structs)}
        self._flat: dict[int, dict[str, Field]] = {}

    def flat(self, index: int) -> dict[str, Field]:
        """{dotted field name: Field at its offset in the struct} of SDNA struct ``index``, embedded structs (not
        arrays of them) flattened."""
        if index not in self._flat:
            out: dict[str, Field] = {}
            for f in self.lay.structs[index][2]:
                inner = self.names.get(f.type)
                if inner is not None and not f.name.startswith(("*", "(*")) and "[" not in f.name:
                    for name, g in self.flat(inner).items():
                        out[f"{f.bare}.{name}"] = Field(g.type, g.name, f.offset + g.offset, g.size)
                else:
                    out[f.bare] = f
            self._flat[index] = out
        return self._flat[index]

    def field(self, struct_name: str, name: str) -> Field | None:
        index = self.names.get(struct_name)
        return None if index is None else self.flat(index).get(name)

    def int(self, at: int, f: Field | None, default: int = 0) -> int:
        if f is None:
            return default
        fmt = {1: "b", 2: "h", 4: "i", 8: "q"}[f.size]
        return struct.unpack_from(self.lay.endian + fmt, self.data, at + f.offset)[0]

    def pointer(self, at: int, f: Field | None) -> int:
        return 0 if f is None else struct.unpack_from(self.ptr, self.data, at + f.offset)[0]

    def block(self, old: int, struct_name: str | None = None) -> Block | None:
        """The block ``old`` names (of SDNA struct ``struct_name`` when given), or None."""
        b = self.by_old.get(old) if old else None
        if b is None or (struct_name is not None and b.sdna != self.names.get(struct_name)):
            return None
        return b

    def string(self, at: int, f: Field | None) -> bytes:
        b = self.block(self.pointer(at, f))
        return b"" if b is None else self.data[b.start:b.start + b.length].split(b"\0", 1)[0]


def _node_id_writes(data: bytes, lay: Layout) -> list:
    """[(offset, new int32)]: every node's identifier renumbered 1, 2, ... in the order of its tree's node list, and
    every field that names a node by it with it; every nested node reference's id (``bNodeTree.nested_node_refs``,
    which a modifier's bakes and the group nodes of the trees that use the tree name) renumbered 1, 2, ... in its
    array's order, with the bakes and the group nodes' references that name it.

    Blender draws a new node's identifier, and a new nested reference's id, from a random generator seeded by the
    clock; they only have to be unique in their tree (readfile keeps them, and the zones, the nested references and
    the bakes find nodes by them), so numbers in the file's order read back the same. A bake that may lie on disk
    (a disk target and a bake folder set) keeps its id, which names its folder there, and the others are numbered
    around it. Raises UnsafeRenumbering (the caller keeps the identifiers as saved) when a node id is found where the
    renumbering does not map it: a struct of the file with a ``*node_id`` field it does not know (a viewer path's
    elements), a reference to a node or nested reference that the tree does not have, or identifiers that repeat
    in one tree."""
    r = _Reader(data, lay)
    tree_index = r.names.get("bNodeTree")
    node_index = r.names.get("bNode")
    if tree_index is None or node_index is None:
        return []
    f_nodes, f_next = r.field("bNodeTree", "nodes.first"), r.field("bNode", "next")
    f_ident, f_storage, f_id = r.field("bNode", "identifier"), r.field("bNode", "storage"), r.field("bNode", "id")
    f_refs, f_refs_num = r.field("bNodeTree", "nested_node_refs"), r.field("bNodeTree", "nested_node_refs_num")
    f_ref_id, f_path_node = r.field("bNestedNodeRef", "id"), r.field("bNestedNodeRef", "path.node_id")
    f_path_in = r.field("bNestedNodeRef", "path.id_in_node")
    if f_ident is None or f_ident.size != 4 or f_nodes is None or f_next is None:
        return []
    writes: list = []
    handled: set = set()  # blocks whose node id fields are mapped
    trees: dict[int, dict] = {}  # tree's old address -> {"nodes": {old id: new}, "groups": {new node id: child tree}}
    for b in lay.blocks:
        if b.sdna != tree_index or b.code == b"DNA1":
            continue
        nodes, groups, seen = {}, {}, set()
        p = r.pointer(b.start, f_nodes)
        storages = []
        while p:
            nb = r.block(p, "bNode")
            if nb is None or p in seen:
                raise UnsafeRenumbering("a node list names a block that is no node: node identifiers kept as saved")
            seen.add(p)
            old = r.int(nb.start, f_ident)
            if old in nodes:
                raise UnsafeRenumbering(f"node identifier {old} repeats in one tree: node identifiers kept as saved")
            nodes[old] = len(nodes) + 1
            writes.append((nb.start + f_ident.offset, nodes[old]))
            child = r.pointer(nb.start, f_id)
            if r.block(child, "bNodeTree") is not None:
                groups[nodes[old]] = child
            storages.append(r.pointer(nb.start, f_storage))
            p = r.pointer(nb.start, f_next)
        for sp in storages:  # a zone's input node names its output node
            sb = r.block(sp)
            if sb is None or sb.sdna == 0:
                continue
            handled.add(sb.start)
            size = lay.structs[sb.sdna][1]
            for name, f in r.flat(sb.sdna).items():
                if not name.endswith(NODE_ID_SUFFIX) or f.size != 4:
                    continue
                for k in range(sb.nr if size else 0):
                    at = sb.start + k * size
                    value = r.int(at, f)
                    if value == 0:  # (no node: Blender's identifiers are positive)
                        continue
                    if value not in nodes:
                        raise UnsafeRenumbering(f"a node's {name} names node {value}, which its tree does not have: "
                                                f"node identifiers kept as saved")
                    writes.append((at + f.offset, nodes[value]))
        trees[b.old] = {"nodes": nodes, "groups": groups, "at": b.start}
    # bakes that may lie on disk, in a folder named by their id: (tree, id) kept
    pinned: set = set()
    bakes: list = []  # (offset of the id, tree)
    mod_index, bake_index = r.names.get("NodesModifierData"), r.names.get("NodesModifierBake")
    if mod_index is not None and bake_index is not None:
        f_group, f_bakes = r.field("NodesModifierData", "node_group"), r.field("NodesModifierData", "bakes")
        f_bakes_num, f_mod_target = r.field("NodesModifierData", "bakes_num"), r.field("NodesModifierData",
                                                                                      "bake_target")
        f_dir = r.field("NodesModifierData", "simulation_bake_directory") or r.field("NodesModifierData",
                                                                                   "bake_directory")
        f_bake_id, f_bake_target = r.field("NodesModifierBake", "id"), r.field("NodesModifierBake", "bake_target")
        f_bake_dir = r.field("NodesModifierBake", "directory")
        bake_size = lay.structs[bake_index][1]
        for b in lay.blocks:
            if b.sdna != mod_index:
                continue
            tree = r.pointer(b.start, f_group)
            bb = r.block(r.pointer(b.start, f_bakes), "NodesModifierBake")
            if bb is None or f_bake_id is None:
                continue
            handled.add(bb.start)
            folder = r.string(b.start, f_dir)
            for k in range(min(r.int(b.start, f_bakes_num), bb.nr)):
                at = bb.start + k * bake_size
                target = r.int(at, f_bake_target) or r.int(b.start, f_mod_target, BAKE_TARGET_DISK)
                if target == BAKE_TARGET_DISK and (folder or r.string(at, f_bake_dir)):
                    pinned.add((tree, r.int(at, f_bake_id)))
                bakes.append((at + f_bake_id.offset, tree))
    # nested references, a tree's after those of the trees its group nodes use
    ref_maps: dict[int, dict] = {}
    ref_size = lay.structs[r.names["bNestedNodeRef"]][1] if "bNestedNodeRef" in r.names else 0

    def refs_of(tree: int, stack: tuple = ()) -> dict:
        if tree in ref_maps:
            return ref_maps[tree]
        if tree in stack:
            raise UnsafeRenumbering("node groups that use each other: node identifiers kept as saved")
        info = trees[tree]
        mapping: dict = {}
        rb = r.block(r.pointer(info["at"], f_refs), "bNestedNodeRef")
        if rb is not None and f_ref_id is not None and f_path_node is not None:
            handled.add(rb.start)
            count = min(r.int(info["at"], f_refs_num), rb.nr)
            elements = [rb.start + k * ref_size for k in range(count)]
            olds = [r.int(at, f_ref_id) for at in elements]
            if len(set(olds)) != len(olds):
                raise UnsafeRenumbering("a nested node reference id repeats in one tree: node identifiers kept as "
                                        "saved")
            kept = {old for old in olds if (tree, old) in pinned}
            number = 0
            for at, old in zip(elements, olds):
                if old in kept:
                    mapping[old] = old
                else:
                    number += 1
                    while number in kept:
                        number += 1
                    mapping[old] = number
                writes.append((at + f_ref_id.offset, mapping[old]))
                node = r.int(at, f_path_node)
                if node not in info["nodes"]:
                    raise UnsafeRenumbering(f"a nested node reference names node {node}, which its tree does not "
                                            f"have: node identifiers kept as saved")
                new_node = info["nodes"][node]
                writes.append((at + f_path_node.offset, new_node))
                child = info["groups"].get(new_node)
                if child is not None and f_path_in is not None:  # a group node: the id of the group's reference
                    inner = r.int(at, f_path_in)
                    child_refs = refs_of(child, (*stack, tree))
                    if inner not in child_refs:
                        raise UnsafeRenumbering(f"a nested node reference names reference {inner} of a group that "
                                                f"does not have it: node identifiers kept as saved")
                    writes.append((at + f_path_in.offset, child_refs[inner]))
        ref_maps[tree] = mapping
        return mapping

    for tree in trees:
        refs_of(tree)
    for at, tree in bakes:
        if tree not in trees:  # a linked group (not in this file): its references are its library's
            continue
        old = struct.unpack_from(lay.endian + "i", data, at)[0]
        if old not in ref_maps[tree]:
            raise UnsafeRenumbering(f"a modifier's bake names nested node reference {old}, which its node group "
                                    f"does not have: node identifiers kept as saved")
        writes.append((at, ref_maps[tree][old]))
    # any other struct of the file that names a node by its identifier: not mapped, so nothing is renumbered
    for b in lay.blocks:
        if b.code == b"DNA1" or b.sdna == 0 or b.start in handled or b.sdna in (tree_index, node_index):
            continue
        names = [n for n in r.flat(b.sdna) if n.endswith(NODE_ID_SUFFIX)]
        if names:
            raise UnsafeRenumbering(f"a {lay.structs[b.sdna][0]} block names nodes by identifier ({names[0]}), "
                                    f"which the renumbering does not map: node identifiers kept as saved")
    return writes


def renumber_nodes(data: bytes, lay: Layout | None = None) -> bytes:
    """``data`` with its node identifiers and nested node reference ids renumbered in file order
    (``_node_id_writes``); raises UnsafeRenumbering where that is not safe."""
    lay = lay or layout(data)
    writes = _node_id_writes(data, lay)
    if not writes:
        return data
    out = bytearray(data)
    pack = struct.Struct(lay.endian + "i")
    for at, value in writes:
        pack.pack_into(out, at, value)
    return bytes(out)


def normalised(data: bytes, fields: tuple = RUNTIME_FIELDS) -> bytes:
    """``data`` (an uncompressed .blend file's bytes) as the same scene saved by any session: every runtime-only
    field zeroed (``fields``) and the clock-seeded ones (``CLOCK_FIELDS``), ``FileGlobal``'s leftover bytes and the
    bytes past strings' and boolean layers' ends zeroed, node identifiers and nested node reference ids renumbered
    in file order (``renumber_nodes``), memory addresses renumbered (Blender up to 4.x: ``renumber_addresses``),
    screen edges' vertices in ascending order; each renumbering kept as saved where it is not safe. Compressed
    files are returned as they are."""
    if is_compressed(data):
        return data
    lay = layout(data)
    spans = (runtime_spans(data, tuple(fields) + CLOCK_FIELDS, lay) + _global_spans(data, lay)
             + _string_tails(data, lay) + _layer_tails(data, lay)
             + _idprop_string_tails(data, lay))
    try:
        data = renumber_nodes(data, lay)
    except UnsafeRenumbering:
        pass
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


def differences(a: bytes, b: bytes, limit: int = 8) -> list[str]:
    """Where two .blend files' bytes differ, as a reader follows it: up to ``limit`` lines, one per block and field
    that differs ("OB block 3, Object +120 (loc[3])", "DATA block 40 (raw, 96 bytes) +12"), after a line for
    different lengths; [] for the same bytes. A file this reader cannot parse, or bytes outside every block's data
    (a block header), are told by their first differing offset. For a test or a log: a file's full bytes say
    nothing to a reader."""
    if a == b:
        return []
    out = [f"{len(a)} bytes against {len(b)}"] if len(a) != len(b) else []
    n = min(len(a), len(b))
    where = np.flatnonzero(np.frombuffer(a, np.uint8, n) != np.frombuffer(b, np.uint8, n))
    if not len(where):
        return out
    try:
        lay = layout(a)
    except (BlendFileError, struct.error, IndexError, ValueError):
        return out + [f"first difference at byte {where[0]} (not a .blend file this reader parses)"]
    r = _Reader(a, lay)
    lines: list = []
    for k, blk in enumerate(lay.blocks):
        i = int(np.searchsorted(where, blk.start))
        if i == len(where) or where[i] >= blk.start + blk.length:
            continue
        at = int(where[i]) - blk.start
        code = blk.code.rstrip(b"\0").decode("latin-1")
        if blk.sdna == 0 or blk.code == b"DNA1" or not lay.structs[blk.sdna][1]:
            line = f"{code} block {k} (raw, {blk.length} bytes) +{at}"
        else:
            name, size, _fields = lay.structs[blk.sdna]
            held = sorted((f.size, f.offset, dotted[:-len(f.bare)] + f.name) for dotted, f in r.flat(blk.sdna).items()
                          if f.offset <= at % size < f.offset + f.size)
            field = f"+{held[0][1]} ({held[0][2]})" if held else f"+{at % size} (padding)"
            line = f"{code} block {k}, {name} {field}"
        lines.append(line)
        if len(lines) == limit:
            break
    return out + (lines or [f"first difference at byte {where[0]} (a block header)"])


def normalise_file(path: str, fields: tuple = RUNTIME_FIELDS) -> bool:
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
