"""Gas giant settings: ``Scene.envfx.gasgiant``, made from ``core.gasgiant.SETTINGS``."""

from __future__ import annotations

from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    StringProperty,
)
from bpy.types import PropertyGroup

from ..core import gasgiant as core_gasgiant
from ..operators.common import PATH_OPTIONS


def _gasgiant_preset_changed(self, context):
    for key, value in core_gasgiant.preset_values(self.preset).items():
        setattr(self, key, value)


_GG_UPDATES = {"preset": _gasgiant_preset_changed}


def _size_items(sizes, none_label=None):
    return tuple((str(s), none_label if (s == 0 and none_label) else str(s), f"{s}") for s in sizes)


def _gasgiant_property(setting):
    """The Blender property of one entry of ``core.gasgiant.SETTINGS``."""
    kw = dict(name=setting.label, description=setting.description)
    kw.update((k, getattr(setting, k)) for k in ("min", "max", "soft_min", "soft_max", "step", "precision")
              if getattr(setting, k) is not None)
    if setting.subtype:
        kw["subtype"] = setting.subtype
    if setting.name in _GG_UPDATES:
        kw["update"] = _GG_UPDATES[setting.name]
    kind = setting.ui
    if kind == "SIZE":
        return EnumProperty(items=_size_items(setting.items, setting.none_label), default=str(setting.default), **kw)
    if kind == "ENUM":
        return EnumProperty(items=setting.items, default=setting.default, **kw)
    if kind == "COLOR":
        return FloatVectorProperty(size=3, default=setting.default, **kw)
    if kind in ("FILE_PATH", "DIR_PATH"):
        return StringProperty(default=setting.default, subtype=kind, options=PATH_OPTIONS, **kw)
    prop = {"INT": IntProperty, "FLOAT": FloatProperty, "BOOL": BoolProperty, "STRING": StringProperty}[kind]
    return prop(default=setting.default, **kw)


_GG_PROPERTIES = {setting.name: _gasgiant_property(setting) for setting in core_gasgiant.UI_SETTINGS}


class EnvFXGasGiantSettings(PropertyGroup):
    """The gas giant settings: one property per entry of ``core.gasgiant.SETTINGS`` that has a ``ui``, made from
    it (name, tooltip, default, limits)."""

    # Text, as every annotation in this file is (``from __future__ import annotations``): Blender evaluates it here
    # when it registers the class. (Property objects kept in the class made Blender 4.2 crash when Python exits.)
    __annotations__ = {name: f"_GG_PROPERTIES[{name!r}]" for name in _GG_PROPERTIES}
