"""A small reader of binary FBX files (what Blender's exporter writes), for tests: the node tree, Properties70
values, a model's transform, a geometry's vertices and the file's axes and unit.

Format: a 27-byte header ("Kaydara FBX Binary  \\0", 0x1A 0x00, uint32 version), then node records: end offset,
property count, property bytes (uint32 each before version 7500, uint64 from it), a name (uint8 length), the
properties (a type letter each: Y C I F D L scalars, f d l i b arrays with length, encoding (1 = zlib) and byte
count, S R with a byte count) and the nested records, closed by a record of zeros. A zero record ends the file's
top-level list too.
"""

import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"Kaydara FBX Binary  \x00\x1a\x00"
_SCALARS = {b"Y": "<h", b"C": "<?", b"I": "<i", b"F": "<f", b"D": "<d", b"L": "<q"}
_ARRAYS = {b"f": "<f4", b"d": "<f8", b"l": "<i8", b"i": "<i4", b"b": "?"}


@dataclass
class Node:
    name: str
    props: list
    children: list = field(default_factory=list)

    def find(self, name):
        """The first child called ``name`` (KeyError if none)."""
        for child in self.children:
            if child.name == name:
                return child
        raise KeyError(f"{self.name} has no {name}")

    def find_all(self, name):
        return [child for child in self.children if child.name == name]

    def properties70(self) -> dict:
        """Properties70 as {name: value (one number or string) or tuple of numbers}."""
        out = {}
        for p in self.find("Properties70").find_all("P"):
            values = p.props[4:]
            out[p.props[0]] = values[0] if len(values) == 1 else tuple(values)
        return out


def _read_property(data, pos):
    kind = data[pos:pos + 1]
    pos += 1
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack_from(fmt, data, pos)[0], pos + struct.calcsize(fmt)
    if kind in _ARRAYS:
        length, encoding, size = struct.unpack_from("<III", data, pos)
        pos += 12
        raw = data[pos:pos + size]
        if encoding == 1:
            raw = zlib.decompress(raw)
        elif encoding != 0:
            raise ValueError(f"unknown array encoding {encoding}")
        values = np.frombuffer(raw, dtype=_ARRAYS[kind])
        if len(values) != length:
            raise ValueError(f"array of {len(values)} values, header says {length}")
        return values, pos + size
    if kind in (b"S", b"R"):
        size = struct.unpack_from("<I", data, pos)[0]
        raw = bytes(data[pos + 4:pos + 4 + size])
        return (raw.decode("utf-8", "replace") if kind == b"S" else raw), pos + 4 + size
    raise ValueError(f"unknown property type {kind!r} at byte {pos - 1}")


def _read_node(data, pos, wide):
    head = "<QQQ" if wide else "<III"
    end, count, _size = struct.unpack_from(head, data, pos)
    pos += struct.calcsize(head)
    name_len = data[pos]
    name = bytes(data[pos + 1:pos + 1 + name_len]).decode("ascii")
    pos += 1 + name_len
    if end == 0:  # the zero record closing a list
        return None, pos
    props = []
    for _ in range(count):
        value, pos = _read_property(data, pos)
        props.append(value)
    node = Node(name, props)
    while pos < end:
        child, pos = _read_node(data, pos, wide)
        if child is None:
            break
        node.children.append(child)
    return node, end


def read(path) -> Node:
    """The file's top-level nodes as the children of a root Node."""
    with open(path, "rb") as fh:
        data = fh.read()
    if not data.startswith(MAGIC):
        raise ValueError(f"{path} is not a binary FBX file")
    version = struct.unpack_from("<I", data, len(MAGIC))[0]
    wide = version >= 7500
    root = Node("", [version])
    pos = len(MAGIC) + 4
    while pos < len(data):
        node, pos = _read_node(data, pos, wide)
        if node is None:
            break
        root.children.append(node)
    return root


def objects(root, kind):
    """{object name: Node} of the Objects section's ``kind`` nodes (Model, Geometry), names without the class."""
    return {node.props[1].split("\x00")[0]: node for node in root.find("Objects").find_all(kind)}


def vertices(geometry: Node) -> np.ndarray:
    return geometry.find("Vertices").props[0].reshape(-1, 3).astype(np.float64)


def _euler_xyz(degrees):
    x, y, z = np.radians(degrees)
    rx = np.array([[1, 0, 0], [0, np.cos(x), -np.sin(x)], [0, np.sin(x), np.cos(x)]])
    ry = np.array([[np.cos(y), 0, np.sin(y)], [0, 1, 0], [-np.sin(y), 0, np.cos(y)]])
    rz = np.array([[np.cos(z), -np.sin(z), 0], [np.sin(z), np.cos(z), 0], [0, 0, 1]])
    return rz @ ry @ rx


def model_matrix(model: Node) -> np.ndarray:
    """A root model's 4x4 local (= file-space) transform: Lcl Translation, Rotation (Euler XYZ, degrees), Scaling.
    Refuses pivots, offsets and other rotation orders, which this reader does not apply."""
    props = model.properties70()
    for name in ("PreRotation", "PostRotation", "RotationOffset", "RotationPivot", "ScalingOffset",
                 "ScalingPivot", "GeometricTranslation", "GeometricRotation", "GeometricScaling"):
        default = (1.0, 1.0, 1.0) if name == "GeometricScaling" else (0.0, 0.0, 0.0)
        if name in props and tuple(props[name]) != default:
            raise ValueError(f"model {model.props[1]!r} has {name} {props[name]}: not supported here")
    if props.get("RotationOrder", 0) != 0:
        raise ValueError(f"model {model.props[1]!r} has rotation order {props['RotationOrder']}")
    matrix = np.eye(4)
    matrix[:3, :3] = _euler_xyz(props.get("Lcl Rotation", (0.0, 0.0, 0.0))) @ np.diag(
        props.get("Lcl Scaling", (1.0, 1.0, 1.0)))
    matrix[:3, 3] = props.get("Lcl Translation", (0.0, 0.0, 0.0))
    return matrix


def global_settings(root: Node) -> dict:
    return root.find("GlobalSettings").properties70()


def to_z_up(root: Node) -> np.ndarray:
    """3x3 matrix from the file's axes to right-handed Z up with the front vector along -Y (the axes Unreal's
    importer converts an FBX scene to before it mirrors Y), read from GlobalSettings."""
    g = global_settings(root)
    m = np.zeros((3, 3))
    m[0, g["CoordAxis"]] = g["CoordAxisSign"]
    m[1, g["FrontAxis"]] = -g["FrontAxisSign"]
    m[2, g["UpAxis"]] = g["UpAxisSign"]
    return m


def corner_vertices(geometry: Node) -> np.ndarray:
    """The vertex index of each polygon corner, in the file's corner order (PolygonVertexIndex marks a polygon's
    last corner as -1 - index)."""
    pvi = geometry.find("PolygonVertexIndex").props[0].astype(np.int64)
    return np.where(pvi < 0, -1 - pvi, pvi)


def layers(geometry: Node, element: str, values: str, index: str, width: int) -> dict:
    """{layer name: values per polygon corner (corners, width)} of the geometry's ``element`` layers
    (LayerElementColor with ``Colors`` and ``ColorIndex``, LayerElementUV with ``UV`` and ``UVIndex``), in the
    file's order; by polygon corner, direct or through the layer's index."""
    out = {}
    for layer in geometry.find_all(element):
        mapping = layer.find("MappingInformationType").props[0]
        if mapping != "ByPolygonVertex":
            raise ValueError(f"{element} {layer.find('Name').props[0]!r} is mapped {mapping}: not supported here")
        data = layer.find(values).props[0].astype(np.float64).reshape(-1, width)
        indices = layer.find_all(index)
        out[layer.find("Name").props[0]] = data[indices[0].props[0]] if indices else data
    return out
