"""Operators: gather inputs, call one plain function, report."""

import bpy

from . import bend, snow

modules = (bend, snow)
classes = tuple(cls for module in modules for cls in module.classes)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
