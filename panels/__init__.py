"""Sidebar panels (3D viewport, tab "EnvFX"): one parent panel, one sub-panel per feature."""

import bpy

from . import bend, farm, gasgiant, lightmap, main, mips, snow, vat, vegetation, wind

modules = (main, bend, wind, vegetation, snow, gasgiant, mips, lightmap, vat, farm)
classes = tuple(cls for module in modules for cls in module.classes)


register, unregister = bpy.utils.register_classes_factory(  # pyright: ignore[reportGeneralTypeIssues] -- typed None
    classes)  # (the stubs type the (register, unregister) pair it returns as None)
