"""Operators: gather inputs, call one plain function, report."""

import bpy

from . import bend, gasgiant, lightmap, mips, snow, snow_render, wind

modules = (bend, wind, snow, snow_render, gasgiant, mips, lightmap)
classes = tuple(cls for module in modules for cls in module.classes)


register, unregister = bpy.utils.register_classes_factory(classes)
