"""One module per feature: build(ctx) adds that feature's area to the demo scene and returns files written."""
