"""Application handlers (registered in __init__.register, removed in unregister)."""

import bpy
from bpy.app.handlers import persistent


@persistent
def on_load_post(*_args):
    """Files saved with an older EnvFX keep working: outdated node groups are rebuilt in place."""
    from .shader_nodes import bend as bend_nodes
    from .shader_nodes import wind as wind_nodes

    bend_nodes.refresh_after_load()
    wind_nodes.refresh_after_load()


def register():
    bpy.app.handlers.load_post.append(on_load_post)


def unregister():
    if on_load_post in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(on_load_post)
