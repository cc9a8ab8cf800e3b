"""Operators: gather inputs, call one plain function, report."""

import bpy

from . import bend, gasgiant, mips, snow, wind

modules = (bend, wind, snow, gasgiant, mips)
classes = tuple(cls for module in modules for cls in module.classes)


register, unregister = bpy.utils.register_classes_factory(classes)
