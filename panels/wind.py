"""Wind sub-panel: scene wind, bake settings, actions, the active asset's response. draw() only reads state."""

import bpy

from .. import bridge
from ..operators.snow import live_push
from ..shader_nodes import wind as wind_nodes
from ..shader_nodes import wind_gpu, wind_rigid
from .main import EnvFXSubPanel, draw_status, group_status


def status(scene: bpy.types.Scene, obj: bpy.types.Object | None) -> list[tuple[str, bool]]:
    """(text, is_alert) lines: what the scene's live wind moves now, and whose wind the active object has."""
    return group_status(scene, obj, wind_nodes.group_for(scene), wind_nodes.is_wind_group,
                        "Nothing in the wind in this scene yet", "Moves {n} object(s) of this scene (group {group})",
                        "wind", "Add Wind to give it this scene's")


def rigid_status(obj: bpy.types.Object) -> list[tuple[str, bool]]:
    """(text, is_alert) lines: whether the object sways whole, and when Add Wind would switch it."""
    rigid, wanted = wind_rigid.is_rigid(obj), bridge.envfx_settings(obj).wind.rigid
    in_modifier = any(isinstance(m, bpy.types.NodesModifier) and wind_nodes.is_wind_group(m.node_group)
                      for m in obj.modifiers)
    if rigid and wanted:
        return [("Sways whole (drivers on its delta rotation)", False)]
    if wanted and in_modifier:
        return [("In the wind by its modifier: Add Wind switches it to rigid sway", True)]
    if rigid:
        return [("Sways whole: Add Wind switches it to the wind's modifier", True)]
    return []


def gpu_status(obj: bpy.types.Object) -> list[tuple[str, bool]]:
    """(text, is_alert) lines: whether the object moves in its materials, and when Add Wind would switch it."""
    w = bridge.envfx_settings(obj).wind
    on_gpu, wanted = wind_gpu.is_gpu_wind(obj), w.gpu and not w.rigid
    in_modifier = any(isinstance(m, bpy.types.NodesModifier) and wind_nodes.is_wind_group(m.node_group)
                      for m in obj.modifiers)
    terrain = next((bridge.envfx_settings(sc).wind.terrain_object for sc in obj.users_scene
                    if bridge.envfx_settings(sc).wind.terrain_object is not None), None)
    if on_gpu and w.category == "GRASS" and terrain is not None:
        return [(f"Grass on the GPU does not follow the terrain object {terrain.name}: switch Wind on GPU off "
                 f"and Add Wind again", True)]
    if on_gpu and wanted:
        return [("Moves in its materials: Material Preview or Rendered shows it", False)]
    if wanted and (in_modifier or wind_rigid.is_rigid(obj)):
        return [("In the wind another way: Add Wind switches it to the GPU", True)]
    if on_gpu:
        return [("Moves on the GPU: Add Wind switches it " + ("to rigid sway" if w.rigid else "to the modifier"), True)]
    return []


class VIEW3D_PT_envfx_wind(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "Wind"

    def draw(self, context):
        layout = bridge.panel_layout(self)
        layout.use_property_split = True
        layout.use_property_decorate = True
        scene = bridge.context_scene(context)
        s = bridge.envfx_settings(scene).wind
        col = layout.column()
        col.prop(s, "source_object")
        source = s.source_object
        if source is not None and scene.objects.get(source.name) is not source:
            col.label(text=f"{source.name} is not in this scene: scene settings are used", icon="ERROR")
        sub = col.column()
        sub.active = source is None
        sub.prop(s, "direction")
        sub.prop(s, "strength")
        col.prop(s, "gust_strength")
        col.prop(s, "gust_frequency")
        col.prop(s, "loop_frames")
        col.prop(s, "ambient")
        grass = layout.column(heading="Grass")
        grass.prop(s, "grass_tilt")
        grass.prop(s, "grass_fade_start")
        grass.prop(s, "grass_fade_end")
        grass.prop(s, "terrain_object")
        push = layout.column(heading="Push")
        image, _tree = wind_nodes.push_source(scene)
        if s.grass_push:
            if live_push.uses_live(scene):
                snow = bridge.envfx_settings(scene).snow
                push.label(text=f"Live from {snow.actors.name if snow.actors else 'no actors'} (no bake)",
                           icon="PLAY")
                push.label(text=f"Frames {snow.frame_start}-{snow.frame_end}, {snow.buffer_resolution} px "
                           f"(the Snow bake's)")
            else:
                push.prop(s, "push_buffer")
            push.prop(s, "push_strength")
            push.prop(s, "push_sway")
            if image is None:
                push.label(text="No baked buffer: the grass is not pushed", icon="ERROR")
            push.operator("envfx.wind_grass_push", text="Stop Pushing Grass", icon="X").on = False
        else:
            push.operator("envfx.wind_grass_push", text="Push Grass", icon="FORCE_FORCE").on = True

        box = layout.box()
        box.label(text="Wind Data", icon="MOD_VERTEX_WEIGHT")
        box.prop(s, "leaf_size")
        box.prop(s, "ao_samples")
        box.prop(s, "channel_layout")
        if s.channel_layout == "CUSTOM":
            row = box.row(align=True)
            for name in ("custom_r", "custom_g", "custom_b", "custom_a"):
                row.prop(s, name, text="")
        box.prop(s, "height_uv")
        box.operator("envfx.wind_bake_data", icon="RENDER_STILL")
        row = box.row(align=True)
        row.label(text="View")
        for channel, text in (("R", "R"), ("G", "G"), ("B", "B"), ("A", "A"), ("HEIGHT", "H"), ("OFF", "Off")):
            row.operator("envfx.wind_view", text=text).channel = channel

        draw_status(layout, status(scene, context.active_object))
        row = layout.row(align=True)
        row.operator("envfx.wind_add", icon="ADD")
        row.operator("envfx.wind_remove", icon="REMOVE", text="Remove")
        layout.operator("envfx.wind_export_engines", icon="EXPORT")

        obj = context.active_object
        if obj is not None and hasattr(obj, "envfx"):
            w = bridge.envfx_settings(obj).wind
            box = layout.box()
            box.label(text=obj.name, icon="OUTLINER_OB_MESH")
            box.operator_menu_enum("envfx.wind_preset", "preset", text="Preset")
            box.prop(w, "rigid")
            row = box.row()
            row.active = not w.rigid  # (rigid sway comes first)
            row.prop(w, "gpu")
            for text, alert in rigid_status(obj) + gpu_status(obj):
                row = box.row()
                row.alert = alert
                row.label(text=text, icon="ERROR" if alert else "INFO")
            for name in ("category", "rigidity", "bend", "sway", "lift", "micro", "ramp", "main_bend",
                         "asset_height"):
                row = box.row()
                row.active = not (w.rigid and name in ("lift", "micro", "asset_height"))  # (no rigid form)
                row.prop(w, name)


classes = (VIEW3D_PT_envfx_wind,)
