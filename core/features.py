"""The features EnvFX has, in the order they appear in the panel and in `envfx info` (no bpy: every layer may read
it)."""

FEATURES = ("bend", "wind", "snow", "gasgiant", "mips", "lightmap", "vat")
