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


def _scoped(a1, a2, b1, b2, e="<"):
    """Two datablocks (materials), each with two nodes in a list after it: Blender reads a data pointer among the
    blocks of its own datablock, so two blocks of one address in two datablocks (memory used again while the file
    was written) are no conflict."""
    def node(nxt, prv):
        return struct.pack(e + "5Q2i", nxt, prv, 0, 0, 0, 2, 0) + struct.pack(e + "Q2i", 0, 1, 2) * 2
    return _file(0, 8, e, [(b"MA\0\0", 2, 0x100, [struct.pack(e + "2i", 1, 2)]),
                           (b"DATA", 3, a1, [node(a2, 0)]), (b"DATA", 3, a2, [node(0, a1)]),
                           (b"MA\0\0", 2, 0x200, [struct.pack(e + "2i", 3, 4)]),
                           (b"DATA", 3, b1, [node(b2, 0)]), (b"DATA", 3, b2, [node(0, b1)])], ADDRESS_STRUCTS)


def test_an_address_of_blocks_in_two_datablocks_is_renumbered_by_block_and_named_in_its_own():
    """Each block gets a number of its own; a pointer names the block of its address in its own datablock. Two
    blocks of one address in one datablock cannot be told apart: the file is kept as saved."""
    apart = _scoped(0x5001, 0x5002, 0x5003, 0x5004)
    shared = _scoped(0x5001, 0x5002, 0x5001, 0x5004)  # (the second material's first node where the first's was)
    assert blendfile.renumber_addresses(apart) == blendfile.renumber_addresses(shared)
    base, step = blendfile.BLOCK_BASE, blendfile.ADDRESS_STEP
    n = [base + step * k for k in range(6)]
    out = blendfile.renumber_addresses(shared)
    lay = blendfile.layout(out)
    assert [b.old for b in lay.blocks] == [*n, 0]
    links = [struct.unpack_from("<2Q", out, b.start) for b in lay.blocks if b.code == b"DATA"]
    assert links == [(n[2], 0), (0, n[1]), (n[5], 0), (0, n[4])]  # (next, prev): each in its own material
    same = _scoped(0x5001, 0x5002, 0x5003, 0x5003)
    with pytest.raises(blendfile.UnsafeRenumbering, match="which two blocks have"):
        blendfile.renumber_addresses(same)


# --- node identifiers --------------------------------------------------------------------------------------------

NODE_STRUCTS = [
    ("Raw", [("char", "byte")]),  # (index 0: raw data's)
    ("ID", [("void", "*next"), ("char", "name[8]"), ("int", "session_uid"), ("int", "us")]),
    ("ListBase", [("void", "*first"), ("void", "*last")]),
    ("bNestedNodePath", [("int", "node_id"), ("int", "id_in_node")]),
    ("bNestedNodeRef", [("int", "id"), ("int", "_pad"), ("bNestedNodePath", "path")]),
    ("bNodeTree", [("ID", "id"), ("ListBase", "nodes"), ("bNestedNodeRef", "*nested_node_refs"),
                   ("int", "nested_node_refs_num"), ("int", "_pad")]),
    ("bNode", [("bNode", "*next"), ("bNode", "*prev"), ("int", "identifier"), ("int", "flag"), ("ID", "*id"),
               ("void", "*storage")]),
    ("NodeGeometrySimulationInput", [("int", "output_node_id"), ("int", "_pad")]),
    ("NodesModifierBake", [("int", "id"), ("int", "flag"), ("uchar", "bake_mode"), ("int8_t", "bake_target"),
                           ("char", "_pad[6]"), ("char", "*directory")]),
    ("NodesModifierData", [("bNodeTree", "*node_group"), ("char", "*simulation_bake_directory"),
                           ("int8_t", "flag"), ("int8_t", "bake_target"), ("char", "_pad[2]"), ("int", "bakes_num"),
                           ("NodesModifierBake", "*bakes")]),
    ("ViewerNodeViewerPathElem", [("int", "node_id"), ("int", "_pad")]),
]
NODE_BASIC = {"uchar": 1, "int8_t": 1}


def _node_file(fmt, ids, refs, bake, target=1, folder=b"", sim_output=None, viewer=False, e="<"):
    """A group ``Group`` (a simulation zone: input node ``ids[1]`` names output ``ids[0]``; its nested reference
    ``refs[0]`` names the output) used by a group node ``ids[2]`` in ``Main`` (nested reference ``refs[1]``: the group
    node, the group's reference), and a nodes modifier on ``Main`` whose bake ``bake`` names ``refs[1]``."""
    structs = NODE_STRUCTS
    index = {name: i for i, (name, _f) in enumerate(structs)}
    q = e + "Q"

    def tree(name, first, last, refs_at, count):
        return [struct.pack(q, 0) + name.ljust(8, b"\0") + struct.pack(e + "2i", 0, 1)
                + struct.pack(e + "3Q2i", first, last, refs_at, count, 0)]

    def node(nxt, prv, ident, id_at=0, storage=0):
        return struct.pack(e + "2Q2i2Q", nxt, prv, ident, 0, id_at, storage)

    def ref(ident, node_id, in_node):
        return struct.pack(e + "4i", ident, 0, node_id, in_node)

    bake_struct = struct.pack(e + "2iBb6sQ", bake, 0, 0, 0, b"", 0)
    modifier = struct.pack(e + "2Q2b2si", 0x2000, 0x3200 if folder else 0, 0, target, b"", 1) + struct.pack(q, 0x3100)
    blocks = [(b"NT\0\0", index["bNodeTree"], 0x1000, tree(b"NTGroup", 0x1100, 0x1200, 0x1400, 1)),
              (b"DATA", index["bNode"], 0x1100, [node(0x1200, 0, ids[0])]),
              (b"DATA", index["bNode"], 0x1200, [node(0, 0x1100, ids[1], storage=0x1300)]),
              (b"DATA", index["NodeGeometrySimulationInput"], 0x1300,
               [struct.pack(e + "2i", ids[0] if sim_output is None else sim_output, 0)]),
              (b"DATA", index["bNestedNodeRef"], 0x1400, [ref(refs[0], ids[0], -1)]),
              (b"NT\0\0", index["bNodeTree"], 0x2000, tree(b"NTMain", 0x2100, 0x2100, 0x2400, 1)),
              (b"DATA", index["bNode"], 0x2100, [node(0, 0, ids[2], id_at=0x1000)]),
              (b"DATA", index["bNestedNodeRef"], 0x2400, [ref(refs[1], ids[2], refs[0])]),
              (b"OB\0\0", index["ID"], 0x2800, [struct.pack(q, 0) + b"OBplane\0" + struct.pack(e + "2i", 0, 1)]),
              (b"DATA", index["NodesModifierData"], 0x3000, [modifier]),
              (b"DATA", index["NodesModifierBake"], 0x3100, [bake_struct])]
    if folder:
        blocks.append((b"DATA", 0, 0x3200, [folder.ljust(8, b"\0")]))
    if viewer:
        blocks.append((b"DATA", index["ViewerNodeViewerPathElem"], 0x3300, [struct.pack(e + "2i", ids[2], 0)]))
    BASIC.update(NODE_BASIC)
    try:
        return _file(fmt, 8, e, blocks, structs)
    finally:
        for key in NODE_BASIC:
            del BASIC[key]


@pytest.mark.parametrize("fmt", [1, 0])
def test_node_identifiers_and_nested_references_are_renumbered_in_file_order_with_what_names_them(fmt):
    """Blender draws node identifiers and nested reference ids from a clock-seeded generator: two saves of one scene
    differ there. Renumbered in file order (1, 2, ... in each tree), with the zone's pairing, the nested references'
    paths (a group node's into the group's references) and the modifier's bake: the same bytes."""
    a = _node_file(fmt, ids=(1_700_001, 2_100_000_000, 5), refs=(640_000, 91), bake=91)
    b = _node_file(fmt, ids=(33, 1_234_567, 2_000_000_001), refs=(7, 123_456), bake=123_456)
    assert a != b
    assert blendfile.normalised(a) == blendfile.normalised(b)
    want = _node_file(fmt, ids=(1, 2, 1), refs=(1, 1), bake=1)
    assert blendfile.renumber_nodes(a) == blendfile.renumber_nodes(b) == want
    assert blendfile.renumber_nodes(want) == want  # idempotent


def test_a_bake_that_may_lie_on_disk_keeps_its_id_and_unknown_node_references_keep_the_file():
    """A disk bake with a bake folder lies in a folder named by its id: that id is kept (the others are numbered
    around it). A struct naming nodes that the renumbering does not map (a viewer path), or a zone naming a node its
    tree does not have, keeps every node identifier as saved."""
    a = _node_file(1, ids=(1_700_001, 2_100_000_000, 5), refs=(640_000, 1), bake=1, target=2, folder=b"//bake")
    assert blendfile.renumber_nodes(a) == _node_file(1, ids=(1, 2, 1), refs=(1, 1), bake=1, target=2,
                                                     folder=b"//bake")
    b = _node_file(1, ids=(1_700_001, 2_100_000_000, 5), refs=(640_000, 91), bake=91, target=2, folder=b"//bake")
    assert blendfile.renumber_nodes(b) == _node_file(1, ids=(1, 2, 1), refs=(1, 91), bake=91, target=2,
                                                     folder=b"//bake")
    packed = _node_file(1, ids=(1_700_001, 2_100_000_000, 5), refs=(640_000, 91), bake=91, target=1, folder=b"//x")
    assert blendfile.renumber_nodes(packed) == _node_file(1, ids=(1, 2, 1), refs=(1, 1), bake=1, target=1,
                                                          folder=b"//x")
    viewer = _node_file(1, ids=(1_700_001, 2_100_000_000, 5), refs=(640_000, 91), bake=91, viewer=True)
    with pytest.raises(blendfile.UnsafeRenumbering, match="ViewerNodeViewerPathElem block names nodes"):
        blendfile.renumber_nodes(viewer)
    assert blendfile.normalised(viewer) == viewer
    dangling = _node_file(1, ids=(1_700_001, 2_100_000_000, 5), refs=(640_000, 91), bake=91, sim_output=12)
    with pytest.raises(blendfile.UnsafeRenumbering, match="names node 12, which its tree does not have"):
        blendfile.renumber_nodes(dangling)


def test_the_bytes_past_a_string_property_and_a_boolean_layer_are_zeroed():
    """Blender 4.2 rounds a raw block up to 4 bytes: the bytes past a string ID property's ``len`` and past a mesh's
    boolean layer (one byte per vertex) are whatever was in memory."""
    structs = [
        ("Raw", [("char", "byte")]),  # (index 0: raw data's)
        ("ID", [("void", "*next"), ("char", "name[8]"), ("int", "session_uid"), ("int", "us")]),
        ("IDPropertyData", [("void", "*pointer"), ("int", "val"), ("int", "val2")]),
        ("IDProperty", [("IDProperty", "*next"), ("char", "type"), ("char", "_pad[3]"), ("IDPropertyData", "data"),
                        ("int", "len"), ("int", "totallen")]),
        ("CustomDataLayer", [("int", "type"), ("int", "_pad"), ("void", "*data")]),
        ("CustomData", [("CustomDataLayer", "*layers"), ("int", "totlayer"), ("int", "_pad")]),
        ("Mesh", [("ID", "id"), ("int", "totvert"), ("int", "_pad"), ("CustomData", "vdata")]),
    ]

    def scene(garbage):
        prop = struct.pack("<Q4sQ2i2i", 0, b"\0\0\0\0", 0x500, 0, 0, 6, 6)  # a string of 5 and its NUL
        layers = struct.pack("<2iQ", 50, 0, 0x700) + struct.pack("<2iQ", 11, 0, 0x800)  # booleans, ints
        mesh = struct.pack("<Q", 0) + b"MEgrid\0\0" + struct.pack("<2i", 0, 1) + struct.pack("<2i", 5, 0) \
            + struct.pack("<Q2i", 0x600, 2, 0)
        return _file(0, 8, "<", [(b"DATA", 3, 0x400, [prop]), (b"DATA", 0, 0x500, [b"stamp\0" + garbage[:2]]),
                                 (b"ME\0\0", 6, 0x900, [mesh]), (b"DATA", 4, 0x600, [layers]),
                                 (b"DATA", 0, 0x700, [b"\1\0\1\1\0" + garbage]),
                                 (b"DATA", 0, 0x800, [struct.pack("<5i", 1, 2, 3, 4, 5)])], structs)

    out = blendfile.normalised(scene(b"\x7f\x13\x99"))
    assert out == blendfile.normalised(scene(b"\0\0\0"))
    blocks = [out[b.start:b.start + b.length] for b in blendfile.layout(out).blocks]
    assert blocks[1] == b"stamp\0\0\0" and blocks[4] == b"\1\0\1\1\0\0\0\0"  # (the values kept)
    assert blocks[5] == struct.pack("<5i", 1, 2, 3, 4, 5)  # (a layer of ints: no tail)


@pytest.mark.parametrize("fmt, pointer, e", FORMATS)
def test_differences_name_the_block_struct_and_field_that_differ(fmt, pointer, e):
    a = _scene(fmt, pointer, e, uids=(7, 8, 9), garbage=b"")
    assert blendfile.differences(a, a) == []
    b = _scene(fmt, pointer, e, uids=(7, 99, 9), garbage=b"")  # the second object's session number
    assert blendfile.differences(a, b) == ["OB block 1, Object +" + str(pointer + 8) + " (id.session_uid)"]
    c = _scene(fmt, pointer, e, uids=(7, 8, 10), edge=(0x20, 0x30), garbage=b"")  # a raw block, a struct array
    raw = f"ID block 2 (raw, {pointer + 16} bytes) +{pointer + 8 + (3 if e == '>' else 0)}"  # (its first byte)
    assert blendfile.differences(a, c) == [raw, f"DATA block 3, ScrEdge +{pointer} (*v1)"]
    assert blendfile.differences(a, c, limit=1) == [raw]
    assert blendfile.differences(a, a + b"\0")[0] == f"{len(a)} bytes against {len(a) + 1}"
    assert blendfile.differences(b"not a blend file", b"not a blend filE") == [
        "first difference at byte 15 (not a .blend file this reader parses)"]
