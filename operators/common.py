"""What the object operators of every feature share: the result of acting on objects, why an object is skipped
(with what to do), putting an object on its scene's group of an effect, and reporting it."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import bpy

from .. import bridge
from ..core import exr as core_exr
from ..shader_nodes import common as nodes_common

if TYPE_CHECKING:  # the stubs' names for the flags' and reports' literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems, PropertyFlagItems, WmReportItems

# Blender 5.0 warns about "//" paths unless a path property says it supports them; 4.2 has no such option. (Here,
# not in props, so that the operators' own path properties need not import the layer above them.)
PATH_OPTIONS: set[PropertyFlagItems] = {"PATH_SUPPORTS_BLEND_RELATIVE"} if bridge.BLENDER_5 else set()


def output_folder(path: str, label: str, blank: str, error: type[Exception] = ValueError) -> str:
    """The folder setting ``path`` (labelled ``label`` in messages) as the folder to write into. Refused with
    ``error``: a blank setting (message ``blank``: which setting to set), and a folder relative to the .blend file
    (``//``) in a file never saved, which has no folder (Blender would read it relative to the folder it was started
    from). Shared by every output folder (the snow bake, the gas giant, the mip chains, the engine export)."""
    if not path.strip():
        raise error(blank)
    if path.startswith("//") and not bpy.data.filepath:
        raise error(f"{label} {path!r} is relative to the .blend file, which is not saved yet: save the file first "
                    "or choose an absolute folder")
    return os.path.normpath(bpy.path.abspath(path))


@dataclass
class ObjectsResult:
    """What an operation did to a list of objects (by name: names survive undo)."""

    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # name -> reason
    warnings: list[str] = field(default_factory=list)

    def skipped_text(self) -> str:
        return "; ".join(f"{name} ({why})" for name, why in self.skipped.items())

    def summary(self, verb: str) -> str:
        text = f"{verb} {len(self.changed)} object(s)"
        if self.unchanged:
            text += f", {len(self.unchanged)} unchanged"
        return text


def mesh_of(obj: bpy.types.Object) -> bpy.types.Mesh:
    """``obj.data`` of a mesh object (``obj.type == "MESH"``, which the caller checked): the API types it as any
    object data."""
    return cast(bpy.types.Mesh, obj.data)


def nodes_modifiers(obj: bpy.types.Object) -> list[bpy.types.NodesModifier]:
    """``obj``'s geometry-nodes modifiers, in order (typed as such: the API types ``obj.modifiers`` by their base)."""
    return [cast(bpy.types.NodesModifier, m) for m in obj.modifiers if m.type == "NODES"]


def no_modifier_reason(obj: bpy.types.Object) -> str | None:
    """Why ``obj`` cannot take an EnvFX geometry-nodes modifier, or None. Library overrides can (their new
    modifiers are kept); a collection instance cannot, and is named as one with what to do."""
    if obj.type == "EMPTY" and obj.instance_type == "COLLECTION" and obj.instance_collection is not None:
        return (f"instances collection {obj.instance_collection.name!r}: an instance cannot take a geometry "
                f"modifier; make it real first (Object > Apply > Make Instances Real)")
    if obj.type not in bridge.GEOMETRY_TYPES:
        return f"{obj.type.lower()} objects cannot take a geometry modifier"
    if obj.library is not None:
        return f"linked from library {obj.library.filepath!r}; make it local or a library override first"
    return None


def linked_reason(obj: bpy.types.Object, mesh_too: bool = False) -> str | None:
    """Why ``obj`` (or, with ``mesh_too``, its data, for work that writes the mesh) cannot be changed here because
    it is linked from a library, with what to do; None when it can."""
    for what, block in (("linked", obj), ("its mesh is linked", obj.data if mesh_too else None)):
        library = getattr(block, "library", None)
        if library is not None:
            return f"{what} from library {library.filepath!r}; make it local first (Object > Relations > Make Local)"
    return None


def changeable(objects: Iterable[bpy.types.Object], result: ObjectsResult,
               reason: Callable[[bpy.types.Object], str | None] = linked_reason) -> list[bpy.types.Object]:
    """The objects of ``objects`` that can be changed here, in order, each once (a script may pass one twice):
    those for which ``reason(obj)`` (default: whether it is linked from a library) gives None. The others are
    booked in ``result`` as skipped, with why."""
    ok = []
    for obj in dict.fromkeys(objects):
        why = reason(obj)
        if why is None:
            ok.append(obj)
        else:
            result.skipped[obj.name] = why
    return ok


def path_in_file(path: str) -> str:
    """``path`` as the open .blend should store a file it reads (an image): relative to the .blend (``//``) when the
    file is saved and Blender's Relative Paths preference is on, as the file browser stores paths, so a project
    folder moved elsewhere (another machine, a render farm's mount) still finds its bakes; else as given."""
    preferences = bpy.context.preferences  # optional in the API; Blender always has them
    if bpy.data.filepath and preferences is not None and preferences.filepaths.use_relative_paths:
        try:
            return bpy.path.relpath(path)
        except ValueError:  # on another drive (Windows): no relative path exists
            return path
    return path


def colour_space(image: bpy.types.Image) -> bpy.types.ColorManagedInputColorspaceSettings:
    """``image.colorspace_settings``, which the API types as optional: every image has them."""
    settings = image.colorspace_settings
    if settings is None:
        raise RuntimeError(f"Image {image.name!r} has no colour space settings")
    return settings


def colour_space_name(image: bpy.types.Image) -> str:
    """The name of ``image``'s colour space (``"sRGB"``, ``"Non-Color"``: the OCIO configuration's names)."""
    return colour_space(image).name


def set_colour_space(image: bpy.types.Image, name: str) -> None:
    """Set ``image``'s colour space by name (``"Non-Color"``, or a name read with ``colour_space_name``)."""
    colour_space(image).name = name  # pyright: ignore[reportAttributeAccessIssue] -- the stubs know only "NONE": the names come from the OCIO configuration


def view_layer_of(scene: bpy.types.Scene) -> bpy.types.ViewLayer:
    """The view layer through which ``scene``'s objects are evaluated here: the context's, else (another scene's, or
    a context without a view layer) the scene's first one."""
    context = bpy.context
    view_layer = context.view_layer if getattr(context, "scene", None) == scene else None
    return view_layer if view_layer is not None else scene.view_layers[0]


def update_world_matrices(scene: bpy.types.Scene) -> None:
    """Bring ``scene``'s view layer (``view_layer_of``) up to date, so the ``matrix_world`` of every object it
    evaluates is where its location, rotation and scale put it now: Blender updates it only when it evaluates the
    scene (a redraw, a frame change, a render), so a script that moves or scales an object and then reads its
    world matrix reads the old one. Cheap when nothing changed; runs the depsgraph handlers."""
    view_layer_of(scene).update()


def evaluated_check(scene: bpy.types.Scene | None = None,
                    again: str = "bake again") -> Callable[[bpy.types.Object], str | None]:
    """A function ``obj -> reason or None``: why Blender does not evaluate ``obj`` (disabled in viewports, by its own
    or a collection's monitor icon, or only in collections excluded from the view layer), so its ``matrix_world`` is
    stale (where it stood when it was last evaluated, not where its location, rotation and scale put it now), or None.
    Operations that read world transforms skip and name such objects instead of using a stale one. ``scene``
    (default: the context's) is read through its view layer (the context's; another scene's first one); ``again``
    finishes what to do ("enable it in the viewport and <again>")."""
    scene = scene or bridge.context_scene(bpy.context)
    view_layer = view_layer_of(scene)
    fix = f"so Blender does not update its world transform: enable it in the viewport and {again}"
    enabled = set()

    # what the view layer evaluates: not excluded, not disabled in viewports
    def walk(layer_collection: bpy.types.LayerCollection) -> None:
        if layer_collection.exclude or layer_collection.collection.hide_viewport:
            return
        enabled.update(obj for obj in layer_collection.collection.objects if not obj.hide_viewport)
        for child in layer_collection.children:
            walk(child)

    walk(view_layer.layer_collection)

    def reason(obj: bpy.types.Object) -> str | None:
        if obj in enabled:
            return None
        if scene.objects.get(obj.name) is not obj:
            return (f"is not in scene {scene.name!r}, so Blender does not update its world transform there: link it "
                    f"into that scene, or {again} in a scene that holds it")
        if view_layer.objects.get(obj.name) is not obj:
            return (f"is not in view layer {view_layer.name!r} (its collection is excluded: the Outliner's "
                    f"checkbox), {fix}")
        if obj.hide_viewport:
            return f"is disabled in viewports (the monitor icon), {fix}"
        off = [c.name for c in obj.users_collection if c.hide_viewport]
        where = f"collection {off[0]!r} is" if off else "a collection holding it is"
        return f"is not evaluated: {where} disabled in viewports (the monitor icon), {fix}"
    return reason


def in_edit_mode(objects: Iterable[bpy.types.Object]) -> list[str]:
    """Names of ``objects`` whose data is in Edit Mode (theirs, or a mesh they share with an object in Edit Mode):
    Blender keeps the edits in a separate edit mesh then, so the object's mesh data can be neither read nor
    written until it is back in Object Mode."""
    return [obj.name for obj in objects if obj.mode == "EDIT" or getattr(obj.data, "is_editmode", False)]


def edit_mode_text(names: Sequence[str]) -> str:
    return f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} in Edit Mode: switch to Object Mode (Tab) first"


def refuse_edit_mode(objects: Iterable[bpy.types.Object], error: type[Exception]) -> None:
    """The rule of every operation that reads or writes objects' mesh data (Apply Bend, Bake Wind Data, Add and
    Remove Wind): none of ``objects``, the ones it would read or write, may be in Edit Mode; else it raises
    ``error`` (the feature's input error) naming them, before anything is changed. Objects it would skip (a curve
    given to Add Wind, an unbent mesh given to Apply Bend) are not its business, in Edit Mode or not."""
    names = in_edit_mode(objects)
    if names:
        raise error(edit_mode_text(names))


def poll_not_in_edit_mode(cls: type[bpy.types.Operator], context: bpy.types.Context,
                          acts_on: Callable[[bpy.types.Object], object]) -> bool:
    """The poll() part of ``refuse_edit_mode``: False, with why, while the object being edited or a selected object
    that the operator would read or write (``acts_on(obj)`` truthy) is in Edit Mode."""
    objects = list(getattr(context, "selected_objects", None) or ())
    editing = getattr(context, "edit_object", None)
    if editing is not None and editing not in objects:
        objects.append(editing)
    names = in_edit_mode(obj for obj in objects if acts_on(obj))
    if names:
        cls.poll_message_set(edit_mode_text(names))
        return False
    return True


def kept_by_override_reason(obj: bpy.types.Object, mods: Sequence[bpy.types.Modifier], effect: str,
                            instead: str) -> str | None:
    """Why the modifiers ``mods`` (of an effect) of ``obj`` cannot be removed, or None: on a library override, a
    modifier that comes from the library stays (Blender brings it back when the file is opened again).
    ``instead`` says what to do."""
    if obj.override_library is None or not any(m.is_override_data for m in mods):
        return None
    library = getattr(obj.override_library.reference, "library", None)  # None: the library file is missing
    where = f"library {library.filepath!r}" if library is not None else "its library"
    return f"its {effect} came from {where}, and a library override cannot remove it; {instead}"


def instancers_of(scene: bpy.types.Scene, names: Iterable[str]) -> dict[str, list[str]]:
    """{object name: names of the collection instances in ``scene`` that show it} for the objects ``names``."""
    wanted = set(names)
    shown = {}
    for inst in scene.objects:
        coll = inst.instance_collection if inst.instance_type == "COLLECTION" else None
        if coll is None:
            continue
        for obj in coll.all_objects:
            if obj.name in wanted:
                shown.setdefault(obj.name, []).append(inst.name)
    return shown


def join_scene_group(result: ObjectsResult, obj: bpy.types.Object, mods: Sequence[bpy.types.Modifier],
                     tree: bpy.types.NodeTree, add: Callable[[], object], was: str,
                     effect: str) -> bool:
    """Put ``obj`` on its scene's group ``tree`` of an effect (``mods``: its modifiers of that effect; ``add()``
    gives it one) and book it in ``result``: unchanged when it was on ``tree`` already, else changed, with a
    warning "<obj> <was> <the group's owner>; it follows this scene's <effect> now" when it left another
    scene's or file's group. Returns whether it changed."""
    previous = nodes_common.move_to_group(mods, tree, add)
    if previous == tree:
        result.unchanged.append(obj.name)
        return False
    if previous is not None:
        result.warnings.append(f"{obj.name} {was} {nodes_common.owner_text(previous)}; it follows this scene's "
                               f"{effect} now")
    result.changed.append(obj.name)
    return True


GROUP_AT = 4  # this many objects with the same warning ("<name>: <text>") are reported in one line


def grouped_warnings(result: ObjectsResult, shown: int | None = 3) -> list[str]:
    """``result.warnings``, with the same warning about many objects (``"<name>: <text>"``, a name the result
    knows) in one line, where it first came: ``"A, B, C and 997 more: <text>"`` (``shown`` names; None: all of
    them, for a log to search). Selecting a level's thousand props gives one line per kind of problem, not a
    thousand."""
    names = set(result.changed) | set(result.unchanged) | set(result.skipped)
    kinds, order = {}, []
    for warning in result.warnings:
        name, sep, text = warning.partition(": ")
        key = text if sep and name in names else warning
        if key not in kinds:
            kinds[key] = []
            order.append(key)
        kinds[key].append(name if key == text else None)
    out = []
    for key in order:
        who = kinds[key]
        if len(who) >= GROUP_AT and None not in who:
            rest = f" and {len(who) - shown} more" if shown is not None else ""
            out.append(f"{', '.join(who[:shown])}{rest}: {key}")
        else:
            out.extend(f"{n}: {key}" if n is not None else key for n in who)
    return out


class Reporter(Protocol):
    """What reports: an operator (or a mixin of operators that declares ``report``)."""

    def report(self, type: set[WmReportItems] | None, message: str) -> None: ...  # noqa: A002 - bpy's name


def report_result(op: Reporter, result: ObjectsResult, verb: str, details: str = "") -> None:
    """Warnings (``grouped_warnings``) and skipped objects as WARNING reports, then one INFO line."""
    for warning in grouped_warnings(result):
        op.report({"WARNING"}, warning)
    if result.skipped:
        op.report({"WARNING"}, f"Skipped: {result.skipped_text()}")
    op.report({"INFO"}, result.summary(verb) + details)


class NeedsScene:
    """Operator mixin: greyed out, with the reason, when there is no scene to work on."""

    if TYPE_CHECKING:  # what the operator class it is mixed into has (not declared here: Blender reads annotations)
        @classmethod
        def poll_message_set(cls, message: Callable[..., str | None] | str | None,  # bpy.types.Operator's
                             *args: Any) -> None: ...

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.scene is None or not hasattr(context.scene, "envfx"):
            cls.poll_message_set("Needs a scene")
            return False
        return True


class PicksFolder:
    """Operator mixin: invoked from the interface, the operator first asks for its ``directory`` in the file
    browser; with no window to pick it in (a script, a background job) it runs on the folder set."""

    if TYPE_CHECKING:  # what the operator class it is mixed into has
        def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]: ...

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> set[OperatorReturnItems]:
        if context.window_manager is None:  # no window to pick the folder in: the folder set
            return self.execute(context)
        context.window_manager.fileselect_add(cast(bpy.types.Operator, self))  # (mixed into an Operator)
        return {"RUNNING_MODAL"}


# --- numbers that cannot be used ---------------------------------------------------------------------------
# Blender stores NaN in a float property whatever its min and max, and clamps inf only to the property's limit
# (3.4e38 without one). Such a value reaching a node group makes every vertex NaN, so settings that drive the live
# effects are checked where they are set (props' update callbacks restore the last good value) and again by the
# operators that add an effect (settings saved in a file before the checks existed).

# no setting of a live effect means anything this large (the bend's own distance limit, in metres)
NUMBER_LIMIT = 1.0e6
_last_good: dict[tuple[int, str], object] = {}


def _rna(owner: bpy.types.bpy_struct) -> bpy.types.Struct:
    """``owner.bl_rna``: the stubs type it as the whole API's BlenderRNA, it is the struct's definition."""
    return cast(bpy.types.Struct, owner.bl_rna)


def bad_numbers(owner: bpy.types.bpy_struct) -> list[tuple[str, float]]:
    """(property name, value) of every float setting of the PropertyGroup ``owner`` that is NaN, infinite or
    beyond ``NUMBER_LIMIT``; remembers the others as the last good values."""
    bad = []
    for any_prop in _rna(owner).properties:
        if any_prop.type != "FLOAT" or any_prop.is_readonly:
            continue
        prop = cast(bpy.types.FloatProperty, any_prop)
        values = list(getattr(owner, prop.identifier)) if prop.array_length else [getattr(owner, prop.identifier)]
        if all(math.isfinite(v) and abs(v) <= NUMBER_LIMIT for v in values):
            _last_good[(owner.as_pointer(), prop.identifier)] = getattr(owner, prop.identifier)
        else:
            bad.append((prop.identifier, next(v for v in values if not (math.isfinite(v) and abs(v) <= NUMBER_LIMIT))))
    return bad


def bad_numbers_text(owner: bpy.types.bpy_struct, bad: Sequence[tuple[str, float]]) -> str:
    names = ", ".join(f"{_rna(owner).properties[name].name} {value:g}" for name, value in bad)
    return f"{names}: use a finite number (at most {NUMBER_LIMIT:g} in size)"


def restore_good_numbers(owner: bpy.types.bpy_struct) -> str | None:
    """Put every unusable float setting of ``owner`` back to its last good value (its default when none was
    seen); returns what was refused, as a sentence, or None."""
    bad = bad_numbers(owner)
    if not bad:
        return None
    text = bad_numbers_text(owner, bad)
    for name, _value in bad:
        prop = cast(bpy.types.FloatProperty, _rna(owner).properties[name])  # bad_numbers reads float settings only
        default = tuple(prop.default_array) if prop.array_length else prop.default  # (an array's default is 0.0)
        good = _last_good.get((owner.as_pointer(), name), default)
        setattr(owner, name, good)  # runs the update callback again, with a good value
    return f"EnvFX refused {text}; kept the last good value"


def check_numbers(*owners: bpy.types.bpy_struct, error: type[Exception] = ValueError) -> None:
    """Refuse (``error``) when a settings group holds an unusable number (saved before the checks existed)."""
    for owner in owners:
        bad = bad_numbers(owner)
        if bad:
            raise error(f"{bad_numbers_text(owner, bad)} (in {_rna(owner).name or _rna(owner).identifier})")


# --- textures cut short: turned off before Blender reads them ---
# Blender 4.2's OpenEXR reader loops for ever on a file cut short in its header (a copy or a disk that ran out of
# space leaves such files), and Blender 5.0's crashed on one once: a file whose EnvFX modifier reads such a texture
# would never finish opening, as soon as the modifier is evaluated. After a file loads (load_post, before the first
# evaluation), the EXR images EnvFX's geometry-nodes modifiers read are checked (core.exr.file_damage: the header,
# the table of chunk offsets and the last chunk); a modifier that reads a damaged one is turned off (viewport and
# render), and so is the node of an EnvFX shader group in a material (muted: the light map on its ground), and the
# file opens. Nothing else changes: the image keeps its file, the modifier and the node their settings.

DAMAGED: dict[str, list[str]] = {}  # object or material name -> what was turned off and why, since the file opened
TURNED_OFF: dict[str, set[str]] = {}  # object name -> the names of its modifiers turned off (for the VAT panel)


def turned_off_still(obj: bpy.types.Object) -> bool:
    """Whether a modifier of ``obj`` that was turned off as the file opened (a damaged texture) is still off."""
    return any(not mod.show_viewport for mod in obj.modifiers if mod.name in TURNED_OFF.get(obj.name, ()))


def _tree_images(tree: bpy.types.NodeTree, seen: set) -> list[bpy.types.Image]:
    """Images the node ``tree`` (and the groups in it) reads: geometry nodes' Image Texture nodes' own inputs,
    shader nodes' Image Texture nodes."""
    if tree.as_pointer() in seen:  # (not the name: a library's tree may share a local one's)
        return []
    seen.add(tree.as_pointer())
    found = []
    for node in tree.nodes:
        image = None
        if node.bl_idname == "GeometryNodeImageTexture":
            socket = node.inputs.get("Image")
            image = getattr(socket, "default_value", None) if socket is not None and not socket.is_linked else None
        elif isinstance(node, bpy.types.ShaderNodeTexImage):
            image = node.image
        elif isinstance(node, (bpy.types.GeometryNodeGroup, bpy.types.ShaderNodeGroup)) and node.node_tree is not None:
            found.extend(_tree_images(node.node_tree, seen))
        if isinstance(image, bpy.types.Image):
            found.append(image)
    return found


def modifier_images(mod: bpy.types.NodesModifier) -> list[bpy.types.Image]:
    """The images a geometry-nodes modifier reads: its Image inputs' values and the Image Texture nodes' own."""
    tree = mod.node_group
    if tree is None:
        return []
    found = []
    interface = tree.interface
    for item in interface.items_tree if interface is not None else ():
        if isinstance(item, bpy.types.NodeTreeInterfaceSocket) and item.in_out == "INPUT" \
                and item.socket_type == "NodeSocketImage":
            value = mod.get(item.identifier)
            if isinstance(value, bpy.types.Image):
                found.append(value)
    found.extend(_tree_images(tree, set()))
    return list({image.name_full: image for image in found}.values())


def image_files(image: bpy.types.Image) -> list[str]:
    """The files Blender reads for ``image`` (a sequence: every file of its numbered series in its folder), those
    that exist; none for packed, generated and other images."""
    if image.packed_file is not None or image.source not in ("FILE", "SEQUENCE") or not image.filepath:
        return []
    path = os.path.normpath(bpy.path.abspath(image.filepath, library=image.library))
    if image.source == "FILE":
        return [path] if os.path.isfile(path) else []
    folder, name = os.path.split(path)
    stem, ext = os.path.splitext(name)
    head = stem.rstrip("0123456789")
    if head == stem:  # no frame number in the name
        return [path] if os.path.isfile(path) else []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(os.path.join(folder, n) for n in names
                  if n.startswith(head) and n.endswith(ext) and n[len(head):len(n) - len(ext)].isdigit())


def exr_damage(path: str) -> str | None:
    """Why the file ``path``, an OpenEXR file, cannot be read whole (core.exr.file_damage), or None (whole, or not
    an OpenEXR file): asked before Blender reads one, as Blender 4.2's reader loops for ever on some cut short."""
    try:
        return core_exr.file_damage(path) if core_exr.is_exr(path) else None
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"


def image_damage(image: bpy.types.Image, cache: dict) -> tuple[str, str] | None:
    """(the file, why it cannot be read whole) of the first OpenEXR file of ``image`` that cannot, or None; ``cache``:
    path -> why, each file checked once."""
    for path in image_files(image):
        if path not in cache:
            cache[path] = exr_damage(path)
        if cache[path] is not None:
            return path, cache[path]
    return None


def _first_damage(images: Iterable[bpy.types.Image], cache: dict) -> tuple[str, str] | None:
    return next((d for d in (image_damage(image, cache) for image in images) if d is not None), None)


def guard_damaged_images() -> list[str]:
    """After a file loads: every EnvFX geometry-nodes modifier that reads an OpenEXR texture cut short is turned off,
    every EnvFX shader group's node in a material that reads one muted (see above); returns the messages, also
    printed and kept in ``DAMAGED`` by object or material."""
    DAMAGED.clear()
    TURNED_OFF.clear()
    messages, cache = [], {}

    def say(owner: str, what: str, done: str, damage: tuple[str, str], undo: str) -> None:
        text = (f"{owner}: its {what} is {done} so that the file opens: it reads {damage[0]}, which is damaged "
                f"({damage[1]}), and Blender would hang or fail reading it. Bake again, or restore the file and "
                f"{undo}")
        messages.append(text)
        DAMAGED.setdefault(owner, []).append(text)
        print(f"EnvFX: {text}")

    for obj in bpy.data.objects:
        for mod in nodes_modifiers(obj):
            tree = mod.node_group
            if tree is None or tree.get(nodes_common.STAMP_KEY) is None or obj.library is not None:
                continue
            damage = _first_damage(modifier_images(mod), cache) if mod.show_viewport or mod.show_render else None
            if damage is not None:
                mod.show_viewport = mod.show_render = False
                TURNED_OFF.setdefault(obj.name, set()).add(mod.name)
                say(obj.name, f"modifier {mod.name!r}", "turned off", damage, "turn the modifier back on")
    # EnvFX's shader groups in materials (the light map on its ground): the group's node is muted, which passes its
    # colour through, so the material shows without it and the texture is not read (drawn or rendered)
    for mat in bpy.data.materials:
        tree = mat.node_tree
        if tree is None or mat.library is not None:
            continue
        for node in tree.nodes:
            group = node.node_tree if isinstance(node, bpy.types.ShaderNodeGroup) else None
            if group is None or node.mute or group.get(nodes_common.STAMP_KEY) is None:
                continue
            damage = _first_damage(_tree_images(group, set()), cache)
            if damage is not None:
                node.mute = True
                say(mat.name, f"node {node.name!r} ({group.name})", "muted", damage, "unmute the node")
    return messages


def missing_images(obj: bpy.types.Object) -> list[str]:
    """The files of the textures ``obj``'s EnvFX geometry-nodes modifiers read (a VAT proxy's player) that are not
    on disk: moved or deleted since the bake (Blender plays nothing from them, and says nothing)."""
    paths = []
    for mod in nodes_modifiers(obj):
        tree = mod.node_group
        if tree is None or tree.get(nodes_common.STAMP_KEY) is None:
            continue
        for image in modifier_images(mod):
            if image.packed_file is None and image.source == "FILE" and image.filepath:
                path = os.path.normpath(bpy.path.abspath(image.filepath, library=image.library))
                if not os.path.isfile(path) and path not in paths:
                    paths.append(path)
    return paths


def report_missing_images() -> list[str]:
    """After a file loads: a message (printed, and returned) per object whose EnvFX modifiers read textures that
    are not on disk."""
    messages = []
    for obj in bpy.data.objects:
        missing = missing_images(obj) if obj.library is None else []
        if missing:
            verb = "is" if len(missing) == 1 else "are"
            messages.append(f"{obj.name}: {len(missing)} of the textures it plays {verb} not on disk "
                            f"({', '.join(missing)}): bake again, or move the files back")
            print(f"EnvFX: {messages[-1]}")
    return messages
