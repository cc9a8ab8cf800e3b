"""core.blendfile: the fields a session writes into a .blend (ID.session_uid, FileGlobal's leftover bytes, screen
edges' vertex order) are found from the file's own SDNA and normalised, in both block-header formats; files built
here byte by byte (the Blender tests save real ones)."""

from __future__ import annotations

import os
import struct

import pytest

from core import blendfile

# a small SDNA: (type, [(field type, field name)]); sizes of the basic types below
STRUCTS = [
    ("ID", [("void", "*next"), ("char", "name[8]"), ("int", "session_uid"), ("int", "us")]),
    ("Object", [("ID", "id"), ("float", "loc[3]"), ("int", "_pad0")]),
    ("FileGlobal", [("char", "subvstr[4]"), ("char", "colorspace[12]"), ("int", "_pad2[2]"), ("int", "flags")]),
    ("ScrEdge", [("ScrEdge", "*next"), ("ScrVert", "*v1"), ("ScrVert", "*v2"), ("short", "flag"),
                 ("short", "_pad[3]")]),
    ("Holder", [("ID", "*idpointer"), ("int", "session_uid")]),  # a pointer to an ID is not an ID
]
BASIC = {"char": 1, "short": 2, "int": 4, "float": 4, "void": 0, "ScrVert": 0}


def _sizes(pointer, structs=STRUCTS):
    sizes = dict(BASIC, ScrEdge=0)
    sizes.update((name, 0) for name, _fields in structs if name not in sizes)  # (a pointer to a struct may come first)
    for name, fields in structs:
        sizes[name] = sum(blendfile._field_size(f, sizes[t], pointer) for t, f in fields)
    return sizes


def _strings(tag, items, e):
    body = b"".join(s.encode() + b"\0" for s in items)
    body += b"\0" * (-len(body) % 4)
    return tag + struct.pack(e + "i", len(items)) + body


def _sdna(pointer, e, structs=STRUCTS):
    sizes = _sizes(pointer, structs)
    types = list(sizes)
    names = sorted({f for _n, fields in structs for _t, f in fields})
    tlen = struct.pack(f"{e}{len(types)}h", *[sizes[t] for t in types])
    tlen += b"\0" * (-len(tlen) % 4)
    strc = struct.pack(e + "i", len(structs))
    for name, fields in structs:
        strc += struct.pack(e + "2h", types.index(name), len(fields))
        for t, f in fields:
            strc += struct.pack(e + "2h", types.index(t), names.index(f))
    return b"SDNA" + _strings(b"NAME", names, e) + _strings(b"TYPE", types, e) + b"TLEN" + tlen + b"STRC" + strc


def _file(fmt, pointer=8, e="<", blocks=(), structs=STRUCTS):
    """A .blend file of ``blocks`` [(code, struct index, old, [element bytes])] then DNA1 and ENDB."""
    if fmt == 1:
        out = b"BLENDER17-01v0500"
        head = struct.Struct("<4siQqq")

        def bhead(code, sdna, old, length, nr):
            return head.pack(code, sdna, old, length, nr)
    else:
        out = b"BLENDER" + (b"-" if pointer == 8 else b"_") + (b"v" if e == "<" else b"V") + b"402"
        head = struct.Struct(e + ("4siQii" if pointer == 8 else "4siIii"))

        def bhead(code, sdna, old, length, nr):
            return head.pack(code, length, old, sdna, nr)
    for code, sdna, old, elements in blocks:
        data = b"".join(elements)
        out += bhead(code, sdna, old, len(data), len(elements)) + data
    dna = _sdna(pointer, e, structs)
    out += bhead(b"DNA1", 0, 0, len(dna), 1) + dna
    return out + bhead(b"ENDB", 0, 0, 0, 0)


def _id(pointer, e, name, uid, us=1):
    head = struct.pack(e + ("Q" if pointer == 8 else "I"), 0xABC)
    return head + name.ljust(8, b"\0") + struct.pack(e + "2i", uid, us)


def _scene(fmt, pointer=8, e="<", uids=(7, 8, 9), edge=(0x30, 0x20), garbage=b"\x7f\x13"):
    p = "Q" if pointer == 8 else "I"
    obj = [_id(pointer, e, b"OBcube", uids[0]) + struct.pack(e + "3fi", 1, 2, 3, 0),
           _id(pointer, e, b"OBlamp", uids[1]) + struct.pack(e + "3fi", 4, 5, 6, 0)]
    pads = garbage[:2].ljust(2, b"\0")
    glob = b" 119" + (b"Linear\0" + garbage).ljust(12, b"\0") + struct.pack(e + "2ii", *pads, 5)
    edges = [struct.pack(e + p * 3 + "h3h", 0, *edge, 1, 0, 0, 0), struct.pack(e + p * 3 + "h3h", 0, 0x10, 0x40, 2,
                                                                              0, 0, 0)]
    holder = [struct.pack(e + p + "i", 0x55, 1234)]
    return _file(fmt, pointer, e, [(b"GLOB", 2, 0x7FFD1000, [glob]), (b"OB\0\0", 1, 0x100, obj),
                                   (b"ID\0\0", 0, 0x200, [_id(pointer, e, b"IDraw", uids[2])]),
                                   (b"DATA", 3, 0x300, edges), (b"DATA", 4, 0x400, holder)])


FORMATS = [(1, 8, "<"), (0, 8, "<"), (0, 4, "<"), (0, 8, ">")]


@pytest.mark.parametrize("fmt, pointer, e", FORMATS)
def test_two_sessions_saves_of_one_scene_become_the_same_bytes(fmt, pointer, e):
    a = _scene(fmt, pointer, e, uids=(7, 8, 9), edge=(0x30, 0x20), garbage=b"\x7f\x13")
    b = _scene(fmt, pointer, e, uids=(201, 202, 203), edge=(0x20, 0x30), garbage=b"\x01\x02")
    assert a != b and len(a) == len(b)
    na, nb = blendfile.normalised(a), blendfile.normalised(b)
    assert na == nb
    want = _scene(fmt, pointer, e, uids=(0, 0, 0), edge=(0x20, 0x30), garbage=b"")
    if (fmt, pointer) == (0, 8):  # (and the addresses renumbered: test_addresses_are_renumbered...)
        want = blendfile.renumber_addresses(want)
    assert na == want  # and only those bytes
    assert blendfile.normalised(na) == na  # idempotent


@pytest.mark.parametrize("fmt, pointer, e", FORMATS)
def test_the_fields_are_found_from_the_files_own_sdna(fmt, pointer, e):
    data = _scene(fmt, pointer, e)
    lay = blendfile.layout(data)
    assert (lay.pointer, lay.endian) == (pointer, e)
    assert [b.code for b in lay.blocks] == [b"GLOB", b"OB\0\0", b"ID\0\0", b"DATA", b"DATA", b"DNA1"]
    uid = lay.field("ID", "session_uid")
    assert uid is not None
    assert (uid.offset, uid.size) == (pointer + 8, 4)
    spans = blendfile.runtime_spans(data)
    ob, raw = lay.blocks[1], lay.blocks[2]
    size = lay.structs[1][1]
    assert spans == [(ob.start + uid.offset, 4), (ob.start + size + uid.offset, 4), (raw.start + uid.offset, 4)]
    # the Holder's own `session_uid` (not an ID's) and the us counts stay (its pointer is renumbered in 4.x files)
    holder = lay.blocks[4]
    at = holder.start + pointer
    assert blendfile.normalised(data)[at:at + 4] == data[at:at + 4] == struct.pack(e + "i", 1234)


def test_field_sizes_read_pointers_function_pointers_and_arrays():
    assert blendfile._field_size("*next", 1, 8) == 8
    assert blendfile._field_size("(*func)()", 1, 4) == 4
    assert blendfile._field_size("name[66]", 1, 8) == 66
    assert blendfile._field_size("mat[4][4]", 4, 8) == 64
    assert blendfile._field_size("*rect[2]", 4, 8) == 16
    assert blendfile.Field("int", "*rect[2]", 0, 16).bare == "rect"


def test_compressed_files_are_left_as_they_are_and_damaged_ones_refused(tmp_path):
    for magic in (blendfile.ZSTD_MAGIC, blendfile.GZIP_MAGIC):
        assert blendfile.normalised(magic + b"rest") == magic + b"rest"
    data = _scene(1)
    with pytest.raises(blendfile.BlendFileError, match="truncated"):
        blendfile.normalised(data[:-10])
    with pytest.raises(blendfile.BlendFileError, match="not a .blend file"):
        blendfile.normalised(b"PNG....")
    with pytest.raises(blendfile.BlendFileError, match="unknown .blend header"):
        blendfile.normalised(b"BLENDER99-01v0500" + data[17:])
    no_dna = data[:data.index(b"DNA1")] + data[-32:]
    with pytest.raises(blendfile.BlendFileError, match="no DNA1"):
        blendfile.normalised(no_dna)


def test_normalise_file_replaces_the_file_whole_and_keeps_its_mode(tmp_path):
    path = tmp_path / "scene.blend"
    path.write_bytes(_scene(0, uids=(3, 4, 5)))
    os.chmod(path, 0o640)
    assert blendfile.normalise_file(str(path)) is True
    assert path.read_bytes() == blendfile.normalised(_scene(0, uids=(3, 4, 5)))
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert blendfile.normalise_file(str(path)) is False  # already normalised: not written again
    assert sorted(os.listdir(tmp_path)) == ["scene.blend"]  # no temporary file left
    path.write_bytes(b"BLENDER-v402" + b"\0" * 5)
    with pytest.raises(blendfile.BlendFileError):
        blendfile.normalise_file(str(path))
    assert sorted(os.listdir(tmp_path)) == ["scene.blend"] and path.read_bytes() == b"BLENDER-v402" + b"\0" * 5


# --- old addresses (Blender up to 4.x) ---------------------------------------------------------------------------

# index 0 is the raw data's (Blender writes untyped arrays with SDNA index 0)
ADDRESS_STRUCTS = [
    ("Link", [("Link", "*next"), ("Link", "*prev")]),
    ("Inner", [("void", "*runtime"), ("int", "x"), ("int", "y")]),
    ("Mat", [("int", "a"), ("int", "b")]),
    ("Node", [("Node", "*next"), ("Node", "*prev"), ("Mat", "**mat"), ("void", "*sock[2]"), ("int", "totcol"),
              ("int", "flag"), ("Inner", "inner[2]")]),
]


def _nodes(n1, n2, raw, m1, m2, floats, elsewhere, runtime, e="<", extra=None):
    """Two nodes in a list (next, prev), the first's material array (a raw pointer array naming two materials),
    pointers to memory that was not written (``elsewhere``, ``runtime``: equal ones stay equal), a raw float
    array. The addresses are the saving session's."""
    def node(nxt, prv, mat, sock, runtimes):
        return struct.pack(e + "5Q2i", nxt, prv, mat, sock, 0, 2, 0) + b"".join(
            struct.pack(e + "Q2i", r, 1, 2) for r in runtimes)
    blocks = [(b"DATA", 3, n1, [node(n2, 0, raw, elsewhere, (runtime, 0))]),
              (b"DATA", 3, n2, [node(0, n1, 0, 0, (0, runtime))]),
              (b"DATA", 0, raw, [struct.pack(e + "2Q", m1, m2)]),
              (b"MA\0\0", 2, m1, [struct.pack(e + "2i", 1, 2)]),
              (b"MA\0\0", 2, m2, [struct.pack(e + "2i", 3, 4)]),
              (b"DATA", 0, floats, [struct.pack(e + "4f", 0.5, 1.5, 2.5, 3.5)])]
    if extra is not None:
        blocks.append((b"DATA", 0, 0x7FFF0000, [struct.pack(e + "Q", extra)]))
    return _file(0, 8, e, blocks, ADDRESS_STRUCTS)


@pytest.mark.parametrize("e", ["<", ">"])
def test_addresses_are_renumbered_in_file_order_and_every_pointer_follows(e):
    """Blender up to 4.x writes each block's memory address as its identifier and every pointer as an address: two
    sessions' saves of one scene differ there. Renumbered (blocks in file order, addresses of no block as one
    number apart), they are the same bytes, and every pointer still names the block it named."""
    a = _nodes(0x5551000, 0x5552000, 0x5553000, 0x5554000, 0x5555000, 0x5556000, 0x6660000, 0x7770000, e)
    b = _nodes(0x9990100, 0x9990040, 0x9990300, 0x9990010, 0x9990500, 0x9990020, 0x1110000, 0x2220000, e)
    assert a != b and len(a) == len(b)
    na, nb = blendfile.normalised(a), blendfile.normalised(b)
    assert na == nb
    base, other, step = blendfile.BLOCK_BASE, blendfile.OTHER_ADDRESS, blendfile.ADDRESS_STEP
    n1, n2, raw, m1, m2, floats = (base + step * k for k in range(6))
    assert na == _nodes(n1, n2, raw, m1, m2, floats, other, other, e)
    lay = blendfile.layout(na)
    assert [b.old for b in lay.blocks] == [n1, n2, raw, m1, m2, floats, 0]  # (DNA1's 0 stays 0)
    assert blendfile.renumber_addresses(na) == na  # idempotent


def test_a_raw_block_holding_an_address_no_pointer_field_names_keeps_the_file_as_saved():
    """A raw block that holds a block's address, and that no ``**`` field names, may be a pointer array the SDNA
    does not type: renumbering would cut its pointers, so the addresses are kept (the rest is normalised)."""
    a = _nodes(0x5551000, 0x5552000, 0x5553000, 0x5554000, 0x5555000, 0x5556000, 0x6660000, 0x7770000,
               extra=0x5554000)
    with pytest.raises(blendfile.UnsafeRenumbering, match="holds the address of a block .0x5554000. that no pointer "
                                                          "field names"):
        blendfile.renumber_addresses(a)
    assert blendfile.normalised(a) == a
    assert blendfile.renumber_addresses(_scene(1)) == _scene(1)  # 5.0 files: stable numbers already
    assert blendfile.renumber_addresses(_scene(0, 4)) == _scene(0, 4)  # (32-bit files: left as they are)
