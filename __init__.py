"""EnvFX: game vertex-shader and baking tricks for Blender (metadata lives in blender_manifest.toml)."""

import bpy

from . import cli, handlers, operators, panels, props

# Features that exist, in the order they appear in the panel and in `envfx info`.
FEATURES = ("bend", "wind", "snow", "gasgiant", "mips", "vat")

_modules = (props, operators, panels, handlers)
_cli_handle = None


def register():
    global _cli_handle
    for module in _modules:
        module.register()
    _cli_handle = bpy.utils.register_cli_command("envfx", cli.cli_command)


def unregister():
    global _cli_handle
    if _cli_handle is not None:
        bpy.utils.unregister_cli_command(_cli_handle)
        _cli_handle = None
    for module in reversed(_modules):
        module.unregister()
