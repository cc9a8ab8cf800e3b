"""Operators: gather inputs, call one plain function, report."""

import bpy

from . import bend, gasgiant, mips, snow, snow_render, vat, wind

modules = (bend, wind, snow, snow_render, gasgiant, mips, vat)
classes = tuple(cls for module in modules for cls in module.classes)


register, unregister = bpy.utils.register_classes_factory(classes)
