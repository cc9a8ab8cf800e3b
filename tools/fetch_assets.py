"""Fetch the real-vegetation corpus for the wind-bake tests: third-party assets from the package registries.

    python tools/fetch_assets.py [--cache DIR]

Reads tools/assets/manifest.json, downloads each package once with its registry's own client (``npm pack``) into
the cache (default ``.cache/assets`` in the repository, ignored by git; ``ENVFX_ASSET_CACHE`` overrides), checks its
sha256, and writes every asset as a Y-up OBJ in centimetres (as asset libraries and tree generators export them:
import with Y up and a scale of 0.01, left unapplied) plus ``index.json``: the assets made, their licences and
constructions, and for any asset that could not be made the reason (``skipped``). Assets already made are kept, so
a second run does no network access. Tree-generator assets run the generator (ez-tree) under Node.js; without Node
they are skipped, saying so. Exit status 0 when at least one asset is available.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
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
        if pkg["registry"] != "npm":
            raise RuntimeError(f"unsupported registry {pkg['registry']!r}")
        if shutil.which("npm") is None:
            raise RuntimeError("npm is not installed")
        subprocess.run(["npm", "pack", f"{pkg['name']}@{pkg['version']}", "--pack-destination", str(dl)],
                       check=True, capture_output=True, timeout=600)
    got = sha256(path)
    if got != pkg["sha256"]:
        path.unlink()
        raise RuntimeError(f"{pkg['file']}: sha256 {got} is not the manifest's {pkg['sha256']}")
    return path


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
                    with tarfile.open(tarballs[asset["package"]]) as tar:
                        member = tar.extractfile(asset["member"])
                        if member is None:  # (a folder or a link in the tarball, not a file)
                            raise ValueError(f"{asset['member']} in {asset['package']} is not a file")
                        objects = _glb_objects(member.read())
                write_obj(obj, objects)
            made.append(dict(name=asset["name"], obj=str(obj), license=asset["license"],
                             construction=asset["construction"], package=asset["package"]))
            if not quiet:
                print(f"{asset['name']}: {obj}")
        except (RuntimeError, subprocess.SubprocessError, OSError, KeyError, ValueError) as exc:
            skipped[asset["name"]] = str(exc)
            if not quiet:
                print(f"{asset['name']}: skipped ({exc})", file=sys.stderr)
    index = dict(assets=made, skipped=skipped, manifest=str(MANIFEST))
    (cache / "index.json").write_text(json.dumps(index, indent=1))
    return index


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--cache", help="cache folder (default .cache/assets, or ENVFX_ASSET_CACHE)")
    args = ap.parse_args(argv)
    index = fetch(cache_dir(args.cache))
    print(f"{len(index['assets'])} assets ready, {len(index['skipped'])} skipped")
    return 0 if index["assets"] else 1


if __name__ == "__main__":
    sys.exit(main())
