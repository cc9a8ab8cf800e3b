"""EnvFX core: the math of every effect in pure numpy. Never imports bpy, mathutils or bmesh."""
