"""ensure_*() builders for the geometry-node and shader-node groups of every effect."""
