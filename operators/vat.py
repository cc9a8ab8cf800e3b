"""Vertex animation texture bake: evaluate animated meshes frame by frame through bpy, encode them with core.vat,
write the textures, the JSON and the proxy mesh (glTF or FBX through Blender's exporters), and add the proxy
``<object>_VAT`` with the VAT player to the scene.

Scripts call ``bake_vat`` (or ``bake_vat_job`` for progress); the operator does exactly that with the scene's
settings (``scene.envfx.vat``) and the selected objects; ``bake_file`` is what a command line does per .blend file.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import deque
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import bpy
import numpy as np

from .. import bridge, progress
from ..core import outputs
from ..core import vat as core_vat
from ..core import vat_engines
from ..shader_nodes import vat as vat_nodes
from ..shader_nodes import wind_gpu, wind_rigid
from .common import NeedsScene, edit_mode_text, in_edit_mode, mesh_of, output_folder, path_in_file, set_colour_space

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems

PROXY_SUFFIX = "_VAT"
PROXY_TAG = "envfx_vat_source"   # object custom property: the object a proxy plays back
PROXY_ID = "envfx_vat_id"  # on a baked object and its proxy: the same id, which stays when the object is renamed
MODIFIER_NAME = "EnvFX VAT"
ENCODE_ON_THREAD = True  # False: encode on the main thread, between the frames (benchmarks/bench_vat.py compares)


class VatInputError(ValueError):
    """Nothing could be baked; nothing was written and the scene is unchanged."""


@dataclass
class VatResult:
    files: list[str] = field(default_factory=list)            # paths written
    proxies: list[str] = field(default_factory=list)          # names of the proxy objects made
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)  # object name -> the JSON written
    warnings: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)     # object name -> why
    timings: dict[str, float] = field(default_factory=dict)   # seconds, see _bake
    removed: list[str] = field(default_factory=list)          # files an earlier bake wrote that this one does not


# the job generator of a bake: yields progress fractions, returns the VatResult
VatJob = Generator[float, None, VatResult]


@dataclass
class VatOptions:
    frame_start: int = 1
    frame_end: int = 250
    step: int = 1
    loop_frames: int = 0              # > 0: bake [frame_start, frame_start + loop_frames), a seamless loop
    encoding: str = "EXR32"
    normals: str = "TEXTURE"
    engine: str = "BLENDER"
    attributes: tuple[str, ...] = ()  # extra point attributes to bake (the wind colour "EnvFX_Wind", ...)
    max_size: int = core_vat.MAX_TEXTURE_SIZE
    export_mesh: bool = True          # glTF (Godot) or FBX (Unity, Unreal) of the proxy
    compress: bool = False            # deflate the textures: smaller files, much slower encoding
    add_proxy: bool = True            # add <object>_VAT with the player to the scene


# --- settings ---------------------------------------------------------------------------------------------

def options_from_scene(scene: bpy.types.Scene) -> VatOptions:
    """The bake options of the scene's VAT settings (``scene.envfx.vat``)."""
    s = bridge.envfx_settings(scene).vat
    return VatOptions(frame_start=s.frame_start, frame_end=s.frame_end, step=s.step,
                      loop_frames=s.loop_frames if s.loop else 0, encoding=s.encoding, normals=s.normals,
                      engine=s.engine, attributes=parse_attributes(s.attributes), max_size=s.max_size,
                      export_mesh=s.export_mesh, compress=s.compress)


def parse_attributes(text: str) -> tuple[str, ...]:
    """The attribute names of a comma-separated list, each once, in order."""
    return tuple(dict.fromkeys(t.strip() for t in str(text).split(",") if t.strip()))


def resolve_output_dir(path: str) -> str:
    return output_folder(path, "Output folder", "No output folder: set the Output Folder in the EnvFX VAT panel",
                         VatInputError)


# --- checks before any work --------------------------------------------------------------------------------

def mesh_objects(objects: Iterable[bpy.types.Object], result: VatResult) -> list[bpy.types.Object]:
    """The objects that can be baked, each once; the others are booked in ``result.skipped`` with why."""
    ok = []
    for obj in dict.fromkeys(objects):
        if obj.type == "EMPTY" and obj.instance_type == "COLLECTION" and obj.instance_collection is not None:
            result.skipped[obj.name] = (f"an instance of collection {obj.instance_collection.name!r}, not a mesh: "
                                        f"make its objects real (Object > Apply > Make Instances Real) and bake "
                                        f"its meshes")
        elif obj.type != "MESH":
            kind = obj.type.lower().replace("_", " ")
            result.skipped[obj.name] = (f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} object, not a mesh: convert "
                                        f"it to a mesh (Object > Convert > Mesh) to bake it")
        elif obj.get(PROXY_TAG) is not None:
            result.skipped[obj.name] = "a VAT proxy (it plays a bake): bake the object it plays instead"
        else:
            ok.append(obj)
    return ok


def proxy_name(source: str) -> str:
    """The name of ``source``'s proxy: ``<source>_VAT``, the source's name shortened (by whole characters) where
    Blender's longest name (63 bytes before 5.0, 255 since) would cut the suffix off."""
    room = (255 if bpy.app.version >= (5, 0, 0) else 63) - len(PROXY_SUFFIX)
    raw = source.encode("utf-8")
    if len(raw) > room:
        source = raw[:room].decode("utf-8", "ignore")
    return source + PROXY_SUFFIX


def find_proxy(source: str) -> bpy.types.Object | None:
    """The proxy playing ``source``'s bake (it names its source): the one under ``proxy_name``, else any (two
    long names alike where Blender cuts them share a proxy name: the second proxy gets Blender's ``.001``), else
    the proxy of the object's bake under an earlier name (the object renamed since: they share ``PROXY_ID``; a copy
    of the object, which shares it too, does not take the proxy of the object it was copied from)."""
    obj = bpy.data.objects.get(source)
    key = obj.get(PROXY_ID) if obj is not None else None

    def plays(proxy):  # (a proxy of another object that was renamed to make room for this name: not this one's)
        return proxy.get(PROXY_TAG) == source and proxy.get(PROXY_ID) in (None, key)
    named = bpy.data.objects.get(proxy_name(source))
    if named is not None and plays(named):
        return named
    found = next((o for o in bpy.data.objects if o.library is None and plays(o)), None)
    if found is not None or key is None:
        return found
    for proxy in bpy.data.objects:
        if proxy.library is None and proxy.get(PROXY_TAG) is not None and proxy.get(PROXY_ID) == key:
            was = bpy.data.objects.get(str(proxy[PROXY_TAG]))
            if was is None or was.get(PROXY_ID) != key:  # renamed away, not a copy that kept the id
                return proxy
    return None


def check_proxy_names(scene: bpy.types.Scene, objects: Iterable[bpy.types.Object]) -> None:
    """Refuse a bake whose proxy name is taken by an object EnvFX did not make."""
    for obj in objects:
        name = proxy_name(obj.name)
        other = bpy.data.objects.get(name)
        if other is not None and other.get(PROXY_TAG) is None:
            raise VatInputError(f"An object named {name!r} exists and is no VAT proxy: rename it, so the bake of "
                                f"{obj.name} can add its proxy under that name")


def validate(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object], out_dir: str, opts: VatOptions
             ) -> tuple[list[int], core_vat.VatSettings, list[bpy.types.Object], VatResult]:
    """Everything that can be checked before a frame is evaluated; returns (frames, settings, meshes, result)."""
    result = VatResult()
    try:
        settings = core_vat.VatSettings(encoding=opts.encoding, normals=opts.normals, engine=opts.engine,
                                        unit_scale=scene.unit_settings.scale_length
                                        if scene.unit_settings.system != "NONE" else 1.0,
                                        max_size=opts.max_size, level=1 if opts.compress else 0).validate()
        frames = core_vat.baked_frames(opts.frame_start, opts.frame_end, opts.step, opts.loop_frames)
        core_vat.check_attribute_names(opts.attributes)
    except core_vat.VatError as exc:
        raise VatInputError(str(exc)) from None
    warning = core_vat.settings_warning(settings.encoding, settings.engine)
    if warning:
        result.warnings.append(warning)
    if not objects:
        raise VatInputError("Nothing selected: select the animated mesh objects to bake")
    meshes = mesh_objects(objects, result)
    if not meshes:
        raise VatInputError("Nothing to bake: " + result_skipped_text(result))
    names = in_edit_mode(meshes)
    if names:
        raise VatInputError(edit_mode_text(names))
    missing = [o.name for o in meshes if scene.collection.all_objects.get(o.name) != o]
    if missing:
        raise VatInputError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not in scene "
                            f"{scene.name!r}: bake in the scene that holds them")
    layer = _view_layer(scene)
    if layer.depsgraph is not None:
        layer.depsgraph.update()  # (once: what was turned on or off since the last redraw)
    still = [o.name for o in meshes if not _evaluated_in(o, layer)]
    if still:
        raise VatInputError(f"{', '.join(still)} {'is' if len(still) == 1 else 'are'} not evaluated in view layer "
                            f"{layer.name!r}, so nothing of {'its' if len(still) == 1 else 'their'} "
                            f"animation would be baked: enable {'it' if len(still) == 1 else 'them'} in viewports "
                            f"(the monitor icon of the object and of its collections in the Outliner) and include "
                            f"its collections in the view layer (their checkbox)")
    check_proxy_names(scene, meshes)
    outputs.check_folder(out_dir, error=VatInputError,
                         empty="No output folder: set the Output Folder in the EnvFX VAT panel")
    for obj in meshes:
        for attr in opts.attributes:
            if mesh_of(obj).attributes.get(attr) is None and mesh_of(obj.evaluated_get(
                    bpy.context.evaluated_depsgraph_get())).attributes.get(attr) is None:
                raise VatInputError(f"{obj.name} has no attribute {attr!r}: check the name in Extra Attributes "
                                    f"(the mesh's Attributes and Color Attributes list them)")
    return frames, settings, meshes, result


def result_skipped_text(result: VatResult) -> str:
    return "; ".join(f"{name} ({why})" for name, why in result.skipped.items())


# --- evaluation ---------------------------------------------------------------------------------------------

def _view_layer(scene):
    """The view layer a bake of ``scene`` evaluates: the window's, else (another scene's, or a context without a
    view layer) the scene's first one."""
    context = bpy.context
    layer = context.view_layer if getattr(context, "scene", None) == scene else None
    return layer if layer is not None else scene.view_layers[0]


def _depsgraph(scene):
    layer = _view_layer(scene)
    return layer.depsgraph if layer.depsgraph is not None else bpy.context.evaluated_depsgraph_get()


def _evaluated_in(obj, layer) -> bool:
    """Whether Blender evaluates ``obj`` (its modifiers, its armature) in view ``layer``: evaluated there (its
    depsgraph, once the layer has one), else not disabled in viewports and in a collection of the layer that is
    neither excluded nor disabled in viewports, nor inside one that is."""
    depsgraph = layer.depsgraph  # (brought up to date by the caller)
    if depsgraph is not None:
        return obj.evaluated_get(depsgraph).is_evaluated
    if obj.hide_viewport:
        return False
    stack = [layer.layer_collection]
    while stack:
        lc = stack.pop()
        if lc.exclude or lc.collection.hide_viewport:
            continue
        if lc.collection.objects.get(obj.name) == obj:
            return True
        stack.extend(lc.children)
    return False


class _EncoderThread:
    """The bake's encoder thread: each frame is encoded (numpy, which lets go of Python's lock while it works) while
    Blender evaluates the next frame, and the textures are finished and written while the proxy is made. Tasks
    run one at a time in the order given. An error in a task is raised in the caller at its next ``submit``,
    ``result`` or ``drain``.

    Blender's Python API is not thread-safe, and Blender lets other Python threads run in the middle of some of its
    own work (a frame change, but also a scene switch, as the glTF exporter does: Blender 4.2 crashed there now and
    then while this thread wrote a file). So the thread runs only while the main thread is in a frame change,
    reads data or runs plain Python: a frame's encoding is ``defer``-red until the next frame change (``release``
    before it), and the bake ``drain``s before anything else of Blender's runs (the exporter) and before a job step
    hands control back to Blender (the modal operator's event loop).
    ``busy``: seconds the thread spent in tasks, per kind (``<kind>_cpu``: of them on a core); ``waited``: seconds
    the caller was held up by it (in all, and per kind of the task waited for: ``waited_for``).
    ``close()`` drops the tasks not started and waits for the one running: after it, nothing writes any more.
    ``inline``: run each task at once on the caller's thread instead (the time it takes is then all waited)."""

    def __init__(self, inline: bool = False):
        self.pool = None if inline else ThreadPoolExecutor(max_workers=1, thread_name_prefix="envfx-vat-encoder")
        self.pending = deque()
        self.busy = {}
        self.waited = 0.0
        self.waited_for = {}
        self.kinds: dict[Future, str] = {}  # the kind of each task queued on the thread (for ``waited_for``)
        self.deferred = []  # tasks (kind, fn, args) held back until ``release``

    def _run(self, kind, fn, args):
        t, cpu = time.perf_counter(), time.thread_time()
        try:
            return fn(*args)
        finally:  # only this thread writes ``busy`` while it runs
            self.busy[kind] = self.busy.get(kind, 0.0) + time.perf_counter() - t
            self.busy[kind + "_cpu"] = self.busy.get(kind + "_cpu", 0.0) + time.thread_time() - cpu

    def submit(self, kind: str, fn, *args):
        """Queue ``fn(*args)`` (``kind``: what ``busy`` books it under); returns its future."""
        if self.pool is None:
            future = Future()
            t = time.perf_counter()
            try:
                future.set_result(self._run(kind, fn, args))
            except Exception as exc:
                future.set_exception(exc)
            self._waited(kind, time.perf_counter() - t)
            future.result()  # raises its error now
            return future
        while self.pending and self.pending[0].done():  # (the ones done: their errors now, their results freed)
            self.result(self.pending[0])
        future = self.pool.submit(self._run, kind, fn, args)
        self.kinds[future] = kind
        self.pending.append(future)
        return future

    def defer(self, kind: str, fn, *args):
        """Hold ``fn(*args)`` back until ``release`` (the next frame change) submits it."""
        self.deferred.append((kind, fn, args))

    def release(self):
        """Submit the tasks held back by ``defer``, in order."""
        deferred, self.deferred = self.deferred, []
        for kind, fn, args in deferred:
            self.submit(kind, fn, *args)

    def drain(self):
        """Wait for every task submitted (raising the first error): the thread is idle after it."""
        while self.pending:
            self.result(self.pending[0])

    def _waited(self, kind, seconds):
        self.waited += seconds
        self.waited_for[kind] = self.waited_for.get(kind, 0.0) + seconds

    def result(self, future):
        """The task's result (waiting for it), or its error."""
        t = time.perf_counter()
        try:
            return future.result()
        finally:
            self._waited(self.kinds.get(future, "encode"), time.perf_counter() - t)
            if future in self.pending and future.done():
                self.pending.remove(future)

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.pending.clear()
        self.kinds.clear()
        self.deferred.clear()


def _named(name, fn, *args):
    """``fn(*args)`` with a core.vat.VatError turned into the VatInputError that names the object."""
    try:
        return fn(*args)
    except core_vat.VatError as exc:
        raise VatInputError(f"{name}: {exc}") from None


class _Sampler:
    """Per object: reads each baked frame of the evaluated mesh and hands it to its ``core.vat.VatEncoder`` (made at
    the first frame, when the vertex count and so the rest pose are known) on the bake's encoder thread."""

    def __init__(self, obj, stem, frames, settings, attributes, fps, loop, folder=None):
        self.name, self.stem, self.frames, self.folder = obj.name, stem, frames, folder
        self.settings, self.attributes, self.fps, self.loop = settings, attributes, fps, loop
        self.counts = []
        self.encoder = None
        self.write_cpu = 0.0  # the encoder's CPU seconds in writing its streamed files (see core.vat.VatEncoder)
        self.proxy_mesh = None
        self.rest = None
        self.warnings = []
        self.first_matrix = None  # the object's world matrix at the first baked frame
        self.transform_moves = False  # whether it changes over the frames (keys, a parent, constraints, drivers)

    def read(self, i, obj, depsgraph, thread):
        ev = obj.evaluated_get(depsgraph)
        matrix = ev.matrix_world
        if self.first_matrix is None:
            self.first_matrix = matrix.copy()
        elif not self.transform_moves:
            self.transform_moves = any(abs(a - b) > 1e-6 * max(1.0, abs(b)) for row, first in zip(matrix,
                                       self.first_matrix) for a, b in zip(row, first))
        mesh = ev.to_mesh()
        try:
            counts = bridge.mesh_counts(mesh)
            self.counts.append(counts)
            message = core_vat.topology_change(self.counts, self.frames[:len(self.counts)])
            if message:
                raise VatInputError(f"{self.name}: {message}")
            if counts[0] == 0:
                raise VatInputError(f"{self.name} has no vertices at frame {self.frames[0]}: nothing to bake")
            positions = bridge.get_positions(mesh)  # fresh arrays, no views of Blender's memory: the thread's
            normals = bridge.vertex_normals(mesh) if self.settings.normals != "NONE" else None
            extras = {}
            for attr in self.attributes:
                try:
                    extras[attr] = bridge.point_attribute(mesh, attr)
                except KeyError:
                    raise VatInputError(f"{self.name} has no attribute {attr!r} at frame {self.frames[i]}: check "
                                        f"the name in Extra Attributes") from None
                except TypeError as exc:
                    raise VatInputError(f"{self.name}: {exc}") from None
            self.encode(thread, i, obj, positions, normals, extras)
        finally:
            ev.to_mesh_clear()
        if i == 0:  # the proxy: the geometry of the first baked frame (its topology is the bake's)
            self.proxy_mesh = bpy.data.meshes.new_from_object(ev, preserve_all_data_layers=True,
                                                               depsgraph=depsgraph)
            self.proxy_mesh.name = proxy_name(self.name)

    def encode(self, thread, i, obj, positions, normals, extras):
        """Frame ``i`` into the textures, on the encoder ``thread`` during the next frame change (the encoder is
        made at the first frame)."""
        if self.encoder is None:
            self.rest = self._rest(obj, positions)
            try:
                self.encoder = core_vat.VatEncoder(
                    self.stem, self.rest, self.frames, self.settings, normals=normals is not None,
                    extras={a: v.shape[1] for a, v in extras.items()}, fps=self.fps, loop=self.loop, source=self.name,
                    folder=self.folder)
            except core_vat.VatError as exc:
                raise VatInputError(f"{self.name}: {exc}") from None
        thread.defer("encode", _named, self.name, self.encoder.add, i, positions, normals, extras)

    def _rest(self, obj, positions) -> np.ndarray:
        """The rest pose: the mesh's own positions when the modifiers keep its vertices, else the first frame."""
        n = positions.shape[0]
        if len(obj.data.vertices) == n:
            return bridge.get_positions(obj.data).copy()
        self.warnings.append(f"{obj.name}: its modifiers change the vertex count ({len(obj.data.vertices)} -> {n}), "
                             f"so the rest pose is the first baked frame, {self.frames[0]}")
        return positions.copy()


# --- the proxy ----------------------------------------------------------------------------------------------

def _make_proxy(scene, obj, mesh, rest, layout):
    """A new object ``<obj>_VAT`` (``proxy_name``; the name is freed first: an earlier proxy of ``obj`` is renamed
    aside, returned with its name to be removed after success or renamed back on failure) with ``mesh`` at the
    rest pose and the UV map EnvFX_VAT."""
    name = proxy_name(obj.name)
    old = find_proxy(obj.name)
    old_name = None
    if old is not None:
        old_name = old.name
        old.name = name + ".envfx-old"
    bridge.set_positions(mesh, rest)
    for attr in (vat_nodes.NORMAL_ATTR,):
        if mesh.attributes.get(attr) is not None:
            mesh.attributes.remove(mesh.attributes[attr])
    uvs = layout.uvs()
    layer = bridge.set_vertex_uv(mesh, core_vat.UV_NAME, uvs)
    uv_index = list(mesh.uv_layers).index(layer)
    texel = mesh.attributes.get(vat_nodes.TEXEL_ATTR)
    if texel is not None:
        mesh.attributes.remove(texel)
    texel = mesh.attributes.new(vat_nodes.TEXEL_ATTR, "FLOAT2", "POINT")
    if len(uvs):
        texel.data.foreach_set("vector", np.ascontiguousarray(uvs, np.float32).reshape(-1))
    proxy = bpy.data.objects.new(name, mesh)
    inside = scene.collection.children_recursive
    collections = [c for c in obj.users_collection if c == scene.collection or c in inside]
    (collections[0] if collections else scene.collection).objects.link(proxy)
    proxy.matrix_world = obj.matrix_world.copy()
    proxy[PROXY_TAG] = obj.name
    proxy[PROXY_ID] = str(obj.get(PROXY_ID) or uuid.uuid4().hex)  # (given to the object itself after success)
    mod = cast(bpy.types.NodesModifier, proxy.modifiers.new(MODIFIER_NAME, "NODES"))
    mod.node_group = vat_nodes.ensure_vat_player()
    return proxy, old, old_name, uv_index


FOLLOW_NAME = "EnvFX Follow"  # the proxy's Child Of constraint on the object it plays, when that object moves


def _follow(proxy, obj) -> None:
    """Make ``proxy`` (placed where ``obj`` is now) follow ``obj``'s transform as it changes over the frames: a
    Child Of constraint whose inverse is ``obj``'s matrix now, so moving the proxy aside by hand still works."""
    con = cast(bpy.types.ChildOfConstraint, proxy.constraints.new("CHILD_OF"))
    con.name = FOLLOW_NAME
    con.target = obj
    con.inverse_matrix = obj.matrix_world.inverted_safe()


def _export_proxy(scene, proxy, path: str, kind: str):
    """Write the proxy (its mesh without the player: the rest pose and its UV maps) with Blender's own glTF or FBX
    exporter (an operator: Blender has no data-API exporter), selecting only the proxy while it runs."""
    view_layer = bpy.context.view_layer if bpy.context.scene == scene else None
    if view_layer is None:  # another scene's, or a context without a view layer: the scene's first one
        view_layer = scene.view_layers[0]
    selected = [o for o in view_layer.objects if o.select_get(view_layer=view_layer)]
    active = view_layer.objects.active
    try:
        for o in selected:
            o.select_set(False, view_layer=view_layer)
        proxy.select_set(True, view_layer=view_layer)
        view_layer.objects.active = proxy
        with bpy.context.temp_override(scene=scene, view_layer=view_layer, selected_objects=[proxy],
                                       active_object=proxy, object=proxy):
            if kind == "GLTF":
                done = bpy.ops.export_scene.gltf(filepath=path, export_format="GLB", use_selection=True,
                                                 export_apply=False, export_animations=False, export_yup=True,
                                                 export_texcoords=True, export_normals=True)
            else:
                done = bpy.ops.export_scene.fbx(filepath=path, use_selection=True, use_mesh_modifiers=False,
                                                bake_space_transform=True, axis_forward="-Z", axis_up="Y",
                                                object_types={"MESH"}, bake_anim=False, add_leaf_bones=False)
    finally:
        proxy.select_set(False, view_layer=view_layer)
        for o in selected:
            try:
                o.select_set(True, view_layer=view_layer)
            except ReferenceError:
                pass
        view_layer.objects.active = active
    if done != {"FINISHED"} or not os.path.isfile(path):
        raise VatInputError(f"Blender's {kind.replace('GLTF', 'glTF')} exporter did not write {path!r}: see the "
                            f"system console")


def _load_image(path: str) -> bpy.types.Image:
    """The texture at ``path`` as an image, its path relative to the saved .blend when Blender's preferences ask
    for relative paths (as a file browser's Relative Path: the project's folder can move)."""
    image = bpy.data.images.load(path, check_existing=True)
    image.filepath = path_in_file(path)
    image.reload()
    set_colour_space(image, "Non-Color")
    image.alpha_mode = "CHANNEL_PACKED"
    return image


def _previous_meta(out_dir: str, stem: str) -> dict | None:
    """The JSON of an earlier bake of ``stem`` in ``out_dir`` (None: none, or not an EnvFX VAT's)."""
    try:
        with open(os.path.join(out_dir, f"{stem}_vat.json"), encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == "envfx-vat" else None


def _baked_object(out_dir: str, stem: str) -> str | None:
    """The object an earlier bake of ``stem`` in ``out_dir`` was of (its JSON's "object"), or None."""
    meta = _previous_meta(out_dir, stem)
    return meta.get("object") if meta is not None and isinstance(meta.get("object"), str) else None


def _previous_files(out_dir: str, stem: str) -> list:
    """Names an earlier bake of ``stem`` wrote into ``out_dir`` (its JSON's "files"), still there."""
    meta = _previous_meta(out_dir, stem)
    if meta is None or not isinstance(meta.get("files"), list):
        return []
    return [n for n in meta["files"] if isinstance(n, str) and os.path.basename(n) == n and n.startswith(stem)
            and os.path.isfile(os.path.join(out_dir, n))]


# --- the bake -----------------------------------------------------------------------------------------------

def bake_vat_job(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object], out_dir: str,
                 opts: VatOptions | None = None) -> VatJob:
    """Validate (raises VatInputError at once), then return a job generator that bakes ``objects`` into
    ``out_dir`` and returns a VatResult. On an error or a cancel nothing is written and the scene is as it was."""
    opts = opts or VatOptions()
    frames, settings, meshes, result = validate(scene, objects, out_dir, opts)
    return _bake(scene, [o.name for o in meshes], out_dir, opts, frames, settings, result)


def _bake(scene, names, out_dir, opts, frames, settings, result):
    """The bake job, in stages: evaluate every frame (each encoded on the encoder thread while the next is
    evaluated, the uncompressed textures streamed into a staging folder as they come), write each object's other
    files (and proxy) there, move them in; on failure undo everything made, on success show the new proxies.

    ``result.timings`` (seconds): ``evaluate`` and ``write`` the main thread's time in the frames and in the rest
    (proxies, exports, JSON), ``encode_wait`` its time held up by the encoder (the part of the encoding not hidden
    behind the evaluation and the export), ``write_wait`` by the writing of the compressed textures, ``encode``
    and ``write_files`` the encoder thread's time in the encoder (streaming included) and in writing the
    compressed textures (``encode_cpu``: the encoder's time on a core; ``encode_write_cpu``: of it, handing the
    streamed files' bytes to the system), ``total`` the bake's."""
    t0 = time.perf_counter()
    timings = {"evaluate": 0.0, "write": 0.0, "encode_wait": 0.0, "write_wait": 0.0, "encode": 0.0,
               "write_files": 0.0}
    old_frame, old_sub = scene.frame_current, scene.frame_subframe
    stems = core_vat.unique_stems(names, lambda stem: _baked_object(out_dir, stem))
    for name, stem in zip(names, stems):
        if stem.lower() != core_vat.file_stem(name).lower():
            result.warnings.append(f"{name}: its files are named {stem}_vat_* ({core_vat.file_stem(name)}_vat_* is "
                                   f"another object's)")
    fps = scene.render.fps / scene.render.fps_base
    samplers = {n: _Sampler(bpy.data.objects[n], stem, frames, settings, opts.attributes, fps, bool(opts.loop_frames))
                for n, stem in zip(names, stems)}
    made, renamed, staging = [], [], None
    had_player = bpy.data.node_groups.get(vat_nodes.GROUP_NAME) is not None
    thread = _EncoderThread(inline=not ENCODE_ON_THREAD)
    ok = False
    try:
        # 1. evaluate every frame (and, for a loop, the frame after the last, which must be the first again); the
        # encoder thread streams the uncompressed textures into the staging folder as the frames come
        staging = outputs.Staging(out_dir, "vat", error=VatInputError)
        for sampler in samplers.values():
            sampler.folder = staging.path
        loop_after, after = yield from _evaluate_frames(scene, frames, opts, samplers, timings, thread)
        thread.release()  # the last frame's encoding, beside the frame change back
        scene.frame_set(old_frame, subframe=old_sub)
        thread.drain()

        # 2. finish and stage the textures (encoder thread) while the proxies are made, export them, stage the
        # rest, then move everything in
        t = time.perf_counter()
        waited = thread.waited
        written = []
        for k, name in enumerate(names):
            written.append(_write_object(scene, name, samplers[name], frames, opts, settings, loop_after, after,
                                         staging, made, renamed, result, thread))
            yield 0.8 + 0.2 * (k + 1) / len(names)
        _commit(out_dir, staging, written, result)
        timings["write"] = time.perf_counter() - t - (thread.waited - waited)
        ok = True
    finally:
        thread.close()  # before anything is undone: the thread writes nothing after this
        if not ok:
            _undo(scene, old_frame, old_sub, staging, made, renamed, samplers, had_player)

    # 3. success: earlier proxies go, the new ones show their bake
    t = time.perf_counter()
    _show_proxies(opts, out_dir, made, renamed, result)
    timings["write"] += time.perf_counter() - t
    timings["encode_wait"] = thread.waited_for.get("encode", 0.0)
    timings["write_wait"] = thread.waited_for.get("write", 0.0)
    timings["encode"] = thread.busy.get("encode", 0.0)
    timings["write_files"] = thread.busy.get("write", 0.0)
    timings["encode_cpu"] = thread.busy.get("encode_cpu", 0.0)
    timings["encode_write_cpu"] = sum(s.write_cpu for s in samplers.values())
    timings["total"] = time.perf_counter() - t0
    result.timings = timings
    return result


def _evaluate_frames(scene, frames, opts, samplers, timings, thread):
    """Job generator: every frame read by the samplers, which hand it to the encoder ``thread`` to encode during
    the next frame change (and, for a loop, the frame after the last, which must be the first again); the thread
    is idle whenever the job yields. Yields progress up to 0.8, returns (that frame or None, its positions per
    object); the last frame's encoding is still held back (``thread.release``)."""
    loop_after = frames[0] + opts.loop_frames if opts.loop_frames else None
    after = {}
    steps = len(frames) + (1 if loop_after is not None else 0)
    for i, frame in enumerate(frames + ([loop_after] if loop_after is not None else [])):
        t = time.perf_counter()
        waited = thread.waited
        thread.release()  # the previous frame's encoding runs while Blender evaluates this one and it is read
        scene.frame_set(frame)
        depsgraph = _depsgraph(scene)
        for name, sampler in samplers.items():
            obj = bpy.data.objects[name]
            if i < len(frames):
                sampler.read(i, obj, depsgraph, thread)
            else:
                after[name] = bridge.evaluated_positions(obj, depsgraph)
        thread.drain()
        timings["evaluate"] += time.perf_counter() - t - (thread.waited - waited)
        yield 0.8 * (i + 1) / steps
    return loop_after, after


def _stage_textures(finished, folder):
    """On the encoder thread, after the encoder's ``finish`` (the future ``finished``): its textures written into
    the staging ``folder``; returns the Encoded, without the files' bytes."""
    enc = finished.result()
    for file_name, data in enc.files.items():
        with open(os.path.join(folder, file_name), "wb") as fh:
            fh.write(data)
    del enc.files
    return enc


def _write_object(scene, name, sampler, frames, opts, settings, loop_after, after, staging, made, renamed, result,
                  thread):
    """One object's textures (finished and written on the encoder ``thread`` while the proxy is made), proxy
    (recorded in ``made`` / ``renamed``), exported mesh and JSON in the staging folder, with its warnings. Returns
    (its stem, the files it wrote)."""
    obj = bpy.data.objects[name]
    stem, rest, encoder = sampler.stem, sampler.rest, sampler.encoder
    result.warnings.extend(sampler.warnings)
    # the encoder's last pass (PNG16 offsets: quantised now that their range is known), then the textures staged
    finished = thread.submit("encode", _named, name, encoder.finish)
    staged = thread.submit("write", _stage_textures, finished, staging.path)
    proxy, uv_index = None, 0
    if opts.add_proxy or opts.export_mesh:
        proxy, old, old_name, uv_index = _make_proxy(scene, obj, sampler.proxy_mesh, rest, encoder.layout)
        sampler.proxy_mesh = None  # the proxy owns it now
        made.append(proxy.name)
        if old is not None:
            renamed.append((old.name, old_name))
    thread.result(finished)  # (waiting for the encoder, then for the writing: booked apart)
    enc = thread.result(staged)  # the thread idle before the exporter runs (see _EncoderThread)
    kind = core_vat.EXPORT_FORMAT[settings.engine] if opts.export_mesh else None
    mesh_name = None
    if kind is not None:
        mesh_name = f"{stem}_vat.{'glb' if kind == 'GLTF' else 'fbx'}"
        _export_proxy(scene, proxy, staging.file(mesh_name), kind)
    sampler.write_cpu = encoder.write_cpu
    sampler.encoder = None
    if sampler.transform_moves and proxy is not None:  # the proxy follows the object, as a game moves it
        _follow(proxy, obj)
    moved = (f"it moves by its transform (its keys, a parent or constraints), which a VAT of its mesh does not "
             f"hold: the proxy follows {name}; give a game its transform animation")
    if encoder.static() and wind_rigid.is_rigid(obj):  # (it moves, by its transform: not what a VAT holds)
        result.warnings.append(f"{name}: its mesh does not move over frames {frames[0]} to {frames[-1]}: it sways "
                               f"whole by its transform (Rigid Sway), which a VAT of its mesh does not hold; give "
                               f"a game its rigid-sway include (Wind > Export for Game Engines) instead")
    elif encoder.static() and wind_gpu.is_gpu_wind(obj):  # (it moves where it is drawn, not in its mesh)
        result.warnings.append(f"{name}: its mesh does not move over frames {frames[0]} to {frames[-1]}: it moves "
                               f"in its materials (Wind on GPU), which a VAT of its mesh does not hold; switch Wind "
                               f"on GPU off and Add Wind again to bake its wind, or give a game the wind's include "
                               f"(Wind > Export for Game Engines)")
    elif encoder.static() and sampler.transform_moves:
        result.warnings.append(f"{name}: its mesh does not move over frames {frames[0]} to {frames[-1]}: {moved}")
    elif sampler.transform_moves:
        result.warnings.append(f"{name}: the VAT holds its mesh's motion in object space; besides, {moved}")
    elif encoder.static():
        result.warnings.append(f"{name}: nothing moves over frames {frames[0]} to {frames[-1]} (static): the "
                               f"VAT holds one pose; check the frame range, or that the animation, armature "
                               f"or EnvFX effect is on")
    if loop_after is not None:
        gap = core_vat.loop_gap(encoder.first, after[name])
        size = float(np.ptp(encoder.first, axis=0).max())
        if gap > 1e-4 * max(1e-6, size):
            result.warnings.append(
                f"{name}: frame {loop_after} is {gap:.4g} away from frame {frames[0]}, so the loop of "
                f"{opts.loop_frames} frames jumps when it wraps: set the loop length to the animation's "
                f"period (for EnvFX wind, its Loop Frames)")
    meta = enc.meta
    if proxy is not None:
        meta["uv"]["index"] = uv_index
    if mesh_name is not None:
        meta["mesh"] = mesh_name
    else:
        meta["files"] = [n for n in meta["files"] if not n.endswith((".glb", ".fbx"))]
        meta["mesh"] = None
    if settings.engine in vat_engines.ENGINES:  # the engine's player include and this bake's material or recipe
        shader_files = vat_engines.engine_files(meta, stem)
        for file_name, text in shader_files.items():
            with open(staging.file(file_name), "w", encoding="utf-8") as fh:
                fh.write(text)
        meta["engine_shader"] = vat_engines.engine_meta(meta, shader_files)
        meta["files"] = sorted(set(meta["files"]) | set(shader_files))
    with open(staging.file(f"{stem}_vat.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=2)
    result.meta[name] = meta
    return stem, list(meta["files"])


def _commit(out_dir, staging, written, result):
    """Move the staged files in and remove the files an earlier bake of the same stems wrote that this one did
    not."""
    stale = []
    for stem, files in written:
        stale += [os.path.join(out_dir, n) for n in _previous_files(out_dir, stem) if n not in files]
    try:
        result.files = staging.commit()
    except OSError as exc:
        raise VatInputError(f"Writing into {out_dir!r} failed ({exc.strerror or exc}): nothing was written") \
            from None
    for path in stale:
        try:
            os.remove(path)
            result.removed.append(path)
        except OSError:
            result.warnings.append(f"could not remove {path}, which an earlier bake wrote: remove it by hand")


def _undo(scene, old_frame, old_sub, staging, made, renamed, samplers, had_player):
    """A failed or cancelled bake leaves the scene as it was: the frame, no staged files, no new proxies (earlier
    ones keep their names), no sampler meshes, no player group it made."""
    scene.frame_set(old_frame, subframe=old_sub)
    for sampler in samplers.values():
        if sampler.encoder is not None:  # its open files (the encoder thread has stopped: nothing writes any more)
            sampler.encoder.close()
    if staging is not None:
        staging.abort()
    for name in made:
        proxy = bpy.data.objects.get(name)
        if proxy is not None:
            mesh = mesh_of(proxy)
            bpy.data.objects.remove(proxy)
            if mesh.users == 0:
                bpy.data.meshes.remove(mesh)
    for old_name, name in renamed:
        old = bpy.data.objects.get(old_name)
        if old is not None:
            old.name = name
    for sampler in samplers.values():
        if sampler.proxy_mesh is not None:
            bpy.data.meshes.remove(sampler.proxy_mesh)
    player = bpy.data.node_groups.get(vat_nodes.GROUP_NAME)
    if player is not None and not had_player:
        bpy.data.node_groups.remove(player)


def _show_proxies(opts, out_dir, made, renamed, result):
    """After a bake: earlier proxies go, the new ones play their bake (or go too without Add Proxy)."""
    for old_name, _name in renamed:
        old = bpy.data.objects.get(old_name)
        if old is not None:
            mesh = old.data
            bpy.data.objects.remove(old)
            if isinstance(mesh, bpy.types.Mesh) and mesh.users == 0:  # (a proxy's data is a mesh)
                bpy.data.meshes.remove(mesh)
    proxies = {}
    for proxy_name_made in made:
        proxy = bpy.data.objects.get(proxy_name_made)
        if proxy is not None:
            proxies[proxy.get(PROXY_TAG)] = proxy
    for name, meta in result.meta.items():
        proxy = proxies.get(name)
        if proxy is None or not opts.add_proxy:
            continue
        mesh_of(proxy).name = proxy.name  # the earlier proxy's mesh, which held the name, is gone
        source = bpy.data.objects.get(name)
        if source is not None and source.get(PROXY_ID) != proxy[PROXY_ID]:
            source[PROXY_ID] = proxy[PROXY_ID]  # (so a bake after a rename replaces this proxy: find_proxy)
        folder = out_dir
        positions = _load_image(os.path.join(folder, meta["textures"]["position"]["file"]))
        normals = _load_image(os.path.join(folder, meta["textures"]["normal"]["file"])) \
            if meta["normals"] == "TEXTURE" else None
        vat_nodes.set_player_inputs(proxy.modifiers[MODIFIER_NAME], meta, positions, normals)
        mesh_of(proxy).update()
        result.proxies.append(proxy.name)
    if not opts.add_proxy:
        for name in made:
            proxy = bpy.data.objects.get(name)
            if proxy is not None:
                mesh = mesh_of(proxy)
                bpy.data.objects.remove(proxy)
                bpy.data.meshes.remove(mesh)


def bake_vat(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object], out_dir: str,
             opts: VatOptions | None = None) -> VatResult:
    """Bake and return the VatResult (progress lines in background mode)."""
    return progress.run(bake_vat_job(scene, objects, out_dir, opts), "VAT")


def bake_file(blend_path: str, object_names: Iterable[str], out_dir: str, frames: tuple[int, int] | None = None,
              step: int = 1, encoding: str = "EXR32", engine: str = "BLENDER", normals: str = "TEXTURE",
              loop_frames: int = 0, attributes: Iterable[str] = (), save: bool = False) -> VatResult:
    """What ``blender -c envfx vat FILE.blend --objects NAMES --out DIR`` does per file: open ``blend_path``,
    find the objects by name in its scene, bake them (``frames`` (first, last), default the scene's range) into
    ``out_dir`` with the JSON and the proxy mesh; ``save``: save the file with the proxies added. Raises
    VatInputError (the message says what to do)."""
    if not os.path.isfile(blend_path):
        raise VatInputError(f"No such .blend file {blend_path!r}: check the path")
    bpy.ops.wm.open_mainfile(filepath=os.path.abspath(blend_path), load_ui=False)
    scene = bridge.context_scene(bpy.context)
    names = list(dict.fromkeys(object_names))
    missing = [n for n in names if scene.collection.all_objects.get(n) is None]
    if missing:
        raise VatInputError(f"{os.path.basename(blend_path)} has no object {', '.join(map(repr, missing))} in scene "
                            f"{scene.name!r}: check --objects (names are case-sensitive)")
    first, last = frames if frames else (scene.frame_start, scene.frame_end)
    opts = VatOptions(frame_start=int(first), frame_end=int(last), step=int(step), loop_frames=int(loop_frames),
                      encoding=encoding.upper(), engine=engine.upper(), normals=normals.upper(),
                      attributes=tuple(attributes))
    result = bake_vat(scene, [scene.objects[n] for n in names], os.path.abspath(out_dir), opts)
    if save:
        bpy.ops.wm.save_mainfile()
    return result


# --- operator -----------------------------------------------------------------------------------------------

class ENVFX_OT_vat_bake(NeedsScene, progress.ModalJobOperator, bpy.types.Operator):
    """Bake the selected animated meshes into vertex animation textures, a JSON file and a proxy mesh, and add the
    proxy with the VAT player to the scene"""

    bl_idname = "envfx.vat_bake"
    bl_label = "Bake VAT"
    bl_options = {"REGISTER", "UNDO"}

    job_label = "VAT"

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not super().poll(context):
            return False
        editing = getattr(context, "edit_object", None)
        if editing is not None:
            cls.poll_message_set(edit_mode_text([editing.name]))
            return False
        return True

    def make_job(self, context: bpy.types.Context) -> VatJob | None:
        scene = bridge.context_scene(context)
        try:
            opts = options_from_scene(scene)
            out = resolve_output_dir(bridge.envfx_settings(scene).vat.output_dir)
            objects = list(getattr(context, "selected_objects", None) or ())
            job = bake_vat_job(scene, objects, out, opts)
        except VatInputError as exc:
            self.report({"ERROR"}, str(exc))
            return None
        return job

    def finish(self, context: bpy.types.Context, result: VatResult) -> set[OperatorReturnItems]:
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        if result.skipped:
            self.report({"WARNING"}, "Skipped: " + result_skipped_text(result))
        sizes = "; ".join(f"{name}: {m['vertex_count']} vertices x {m['frames']} frames in "
                          f"{m['layout']['width']}x{m['layout']['height']}" for name, m in result.meta.items())
        self.report({"INFO"}, f"Baked {len(result.meta)} object(s) into {len(result.files)} file(s); {sizes}")
        return {"FINISHED"}


classes = (ENVFX_OT_vat_bake,)
