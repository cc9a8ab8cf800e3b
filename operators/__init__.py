"""Operators: gather inputs, call one plain function, report."""

import bpy

from . import bend, farm, gasgiant, lightmap, mips, snow, vat, vegetation, wind, wind_engines, wind_view

modules = (bend, wind, wind_view, wind_engines, vegetation, snow, gasgiant, mips, lightmap, vat, farm)
classes = tuple(cls for module in modules for cls in module.classes)


register, unregister = bpy.utils.register_classes_factory(  # pyright: ignore[reportGeneralTypeIssues] -- typed None
    classes)  # (the stubs type the (register, unregister) pair it returns as None)
