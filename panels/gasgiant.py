"""Gas Giant sub-panel: presets, look, particles, outputs, the bake button. draw() only reads state."""

import bpy

from .. import bridge
from ..core import gasgiant as core_gasgiant
from .main import EnvFXSubPanel


class VIEW3D_PT_envfx_gasgiant(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "Gas Giant"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = bridge.panel_layout(self)
        layout.use_property_split = True
        layout.use_property_decorate = False
        s = bridge.envfx_settings(bridge.context_scene(context)).gasgiant
        row = layout.row(align=True)
        row.prop(s, "preset")
        row.operator("envfx.gasgiant_randomize", text="", icon="FILE_REFRESH")

        col = layout.column(heading="Bands")
        col.prop(s, "vertical_bands")
        col.prop(s, "bands")
        col.prop(s, "band_speed")
        col.prop(s, "band_power")
        col.prop(s, "pole_attenuation")

        col = layout.column(heading="Turbulence")
        col.prop(s, "noise_speed")
        col.prop(s, "noise_scale")
        col.prop(s, "octaves")
        col.prop(s, "falloff")
        col.prop(s, "gain")
        col.prop(s, "w_offset")

        col = layout.column(heading="Vortices")
        col.prop(s, "vortices")
        sub = col.column()
        sub.active = s.vortices > 0
        sub.prop(s, "vortex_size")
        sub.prop(s, "vortex_size_variance")
        sub.prop(s, "vortex_strength")
        sub.prop(s, "vortex_band_threshold")

        col = layout.column(heading="Colour")
        col.prop(s, "color_source")
        if s.color_source == "PALETTE":
            col.prop(s, "palette_path")
            col.prop(s, "mapping")
        elif s.color_source == "CUBEMAP":
            col.prop(s, "palette_cube_dir")
        else:
            for i in range(1, 6):
                col.prop(s, f"ramp_color_{i}")
        col.prop(s, "opacity")
        col.prop(s, "opacity_start")
        col.prop(s, "blur_interval")
        sub = col.column()
        sub.active = s.blur_interval > 0
        sub.prop(s, "blur")
        sub.prop(s, "fade_rate")
        sub.prop(s, "fade_to_palette")
        sub.prop(s, "hot_pink")
        col.prop(s, "cloud_mode")
        sub = col.column()
        sub.active = s.cloud_mode
        sub.prop(s, "cloud_color")
        sub.prop(s, "cloud_noise")

        col = layout.column(heading="Particles")
        col.prop(s, "particles")
        col.prop(s, "iterations")
        col.prop(s, "velocity_factor")
        col.prop(s, "lifetime")
        sub = col.column()
        sub.active = s.lifetime > 0
        sub.prop(s, "respawn_batches")
        sub.prop(s, "fade_in")
        sub.prop(s, "fade_out")
        col.prop(s, "seed")
        col.prop(s, "threads")

        col = layout.column(heading="Output")
        col.prop(s, "output_dir")
        col.prop(s, "field_size")
        col.prop(s, "cubemap_size")
        col.prop(s, "equirect_width")
        col.prop(s, "file_format")
        col.prop(s, "cube_layout")
        col.prop(s, "flow_scale")
        col.prop(s, "frames")
        sub = col.column()
        sub.active = s.frames > 1
        sub.prop(s, "frame_iterations")
        sub.prop(s, "time_step")
        sub.prop(s, "field_interval")
        col.prop(s, "save_field_path")
        col.prop(s, "load_field_path")
        col.prop(s, "make_planet")
        sub = col.column()
        sub.active = s.make_planet
        sub.prop(s, "planet_name")

        params = core_gasgiant.GasGiantParams(
            particles=s.particles, iterations=s.iterations, field_size=int(s.field_size),
            cubemap_size=int(s.cubemap_size), equirect_width=int(s.equirect_width), threads=s.threads,
            fade_to_palette=s.fade_to_palette, frames=s.frames, frame_iterations=s.frame_iterations,
            time_step=s.time_step, noise_speed=s.noise_speed, field_interval=s.field_interval,
            save_field="x.npz" if s.save_field_path.strip() else "")
        if s.preview:
            params = core_gasgiant.preview(params)
        est = core_gasgiant.estimate_memory(params)
        seconds = core_gasgiant.estimate_seconds(params)
        when = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
        layout.label(text=f"Needs about {est / 2**30:.2f} GB, {core_gasgiant.particle_steps(params) / 1e9:.2f} "
                     f"billion particle-steps, about {when} (estimate)", icon="INFO")
        row = layout.row(align=True)
        row.prop(s, "preview", toggle=True, icon="HIDE_OFF")
        row.operator("envfx.gasgiant_bake", icon="RENDER_STILL")


classes = (VIEW3D_PT_envfx_gasgiant,)
