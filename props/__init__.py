"""All user-facing settings: ``Scene.envfx`` (global) and ``Object.envfx`` (per object).

One module per feature (``props/bend.py``, ``props/wind.py``, ...) holds that feature's settings; this module holds
the two roots that gather them, the registration order and the names other modules read from ``props``."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, PointerProperty
from bpy.types import PropertyGroup

from .bend import EnvFXBendSettings, _bend_exclude_changed
from .common import OVERRIDABLE, _numbers_checked, _report
from .gasgiant import EnvFXGasGiantSettings
from .lightmap import EnvFXLightmapSettings
from .mips import EnvFXMipsSettings
from .snow import EnvFXSnowObjectSettings, EnvFXSnowSettings
from .vat import EnvFXVatSettings
from .vegetation import EnvFXVegetationSettings, colorize_band_property, colorize_per_vertex_property
from .wind import EnvFXObjectWindSettings, EnvFXWindSettings

__all__ = (
    "OVERRIDABLE",
    "_numbers_checked",
    "_report",
    "EnvFXBendSettings",
    "EnvFXWindSettings",
    "EnvFXObjectWindSettings",
    "EnvFXMipsSettings",
    "EnvFXGasGiantSettings",
    "EnvFXSnowSettings",
    "EnvFXSnowObjectSettings",
    "EnvFXLightmapSettings",
    "EnvFXVatSettings",
    "EnvFXVegetationSettings",
    "EnvFXSceneSettings",
    "EnvFXObjectSettings",
    "classes",
    "register",
    "unregister",
)


# --- Roots ------------------------------------------------------------------------------------------------

class EnvFXSceneSettings(PropertyGroup):
    bend: PointerProperty(type=EnvFXBendSettings)
    wind: PointerProperty(type=EnvFXWindSettings)
    mips: PointerProperty(type=EnvFXMipsSettings)
    gasgiant: PointerProperty(type=EnvFXGasGiantSettings)
    snow: PointerProperty(type=EnvFXSnowSettings)
    lightmap: PointerProperty(type=EnvFXLightmapSettings)
    vat: PointerProperty(type=EnvFXVatSettings)
    vegetation: PointerProperty(type=EnvFXVegetationSettings)


class EnvFXObjectSettings(PropertyGroup):
    bend_exclude: BoolProperty(
        name="Exclude from Bend",
        description="Never bend this object (the write-up's BEND_OFF), even when its collection is bent",
        default=False,
        update=_bend_exclude_changed,
        override=OVERRIDABLE,
    )
    bend_gpu: BoolProperty(
        name="Bend on GPU",
        description="Add Bend bends this object in its materials (vertex displacement drawn by Eevee and Cycles, as "
        "a game's vertex shader bends its world) instead of by a modifier: no work per frame on the CPU, however "
        "many objects. Shown in Material Preview and Rendered viewports and in renders, not in Solid mode; nothing "
        "reads the bent shape (picking, Apply Bend, other effects). Add Bend switches an object already bent",
        default=False,
        override=OVERRIDABLE,
    )
    wind: PointerProperty(type=EnvFXObjectWindSettings, override=OVERRIDABLE)
    snow: PointerProperty(type=EnvFXSnowObjectSettings, override=OVERRIDABLE)
    # the vegetation's per-object settings sit here, not in a sub-group: the colorize shader reads them as Object
    # attributes by path, which Blender resolves one level deep only (props/vegetation.py)
    colorize_band: colorize_band_property()
    colorize_per_vertex: colorize_per_vertex_property()


classes = (
    EnvFXBendSettings,
    EnvFXWindSettings,
    EnvFXObjectWindSettings,
    EnvFXMipsSettings,
    EnvFXGasGiantSettings,
    EnvFXSnowSettings,
    EnvFXSnowObjectSettings,
    EnvFXLightmapSettings,
    EnvFXVatSettings,
    EnvFXVegetationSettings,
    EnvFXSceneSettings,
    EnvFXObjectSettings,
)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Scene.envfx = (  # pyright: ignore[reportAttributeAccessIssue] -- the add-on's own: unknown to the stubs
        PointerProperty(type=EnvFXSceneSettings))
    bpy.types.Object.envfx = (  # pyright: ignore[reportAttributeAccessIssue] -- the add-on's own: unknown to the stubs
        PointerProperty(type=EnvFXObjectSettings, override=OVERRIDABLE))


def unregister():
    del bpy.types.Object.envfx  # pyright: ignore[reportAttributeAccessIssue] -- the add-on's own: unknown to the stubs
    del bpy.types.Scene.envfx  # pyright: ignore[reportAttributeAccessIssue] -- the add-on's own: unknown to the stubs
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
