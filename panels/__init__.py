"""Sidebar panels (3D viewport, tab "EnvFX"): one parent panel, one sub-panel per feature."""

import bpy

from . import bend, main, snow

modules = (main, bend, snow)
classes = tuple(cls for module in modules for cls in module.classes)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
