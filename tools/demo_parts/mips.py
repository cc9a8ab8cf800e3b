"""Demo part: alpha-coverage mip chains. A procedural leaf-card texture gets its chain baked with the operator
(DDS, PNG levels, JSON report into demo_out/mips/), and again as a BC1 DDS (demo_out/mips_bc1/); the comparison
picture -- every level alpha-tested, naive chain above the coverage-preserving one -- is copied to
demo_out/mips.png. A card using the texture is added to the scene so demo.blend holds the packed image."""

import importlib
import json
import os
import shutil
import sys


def _envfx_module(name):
    pkg = next(mod for key, mod in sys.modules.items() if key.startswith("bl_ext.") and key.endswith(".envfx"))
    return importlib.import_module(f"{pkg.__name__}.{name}")


def _card(bpy, coll, image):
    mat = bpy.data.materials.new("Demo Leaf Card")
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        mat.use_nodes = True
    nt = mat.node_tree
    nt.nodes.clear()
    tex = nt.nodes.new("ShaderNodeTexImage")
    tex.image = image
    clip = nt.nodes.new("ShaderNodeMath")
    clip.operation = "GREATER_THAN"
    clip.inputs[1].default_value = 0.4999
    mix = nt.nodes.new("ShaderNodeMixShader")
    transparent = nt.nodes.new("ShaderNodeBsdfTransparent")
    bsdf = nt.nodes.new("ShaderNodeBsdfDiffuse")
    out = nt.nodes.new("ShaderNodeOutputMaterial")
    nt.links.new(tex.outputs["Alpha"], clip.inputs[0])
    nt.links.new(tex.outputs["Color"], bsdf.inputs["Color"])
    nt.links.new(clip.outputs["Value"], mix.inputs["Fac"])
    nt.links.new(transparent.outputs["BSDF"], mix.inputs[1])
    nt.links.new(bsdf.outputs["BSDF"], mix.inputs[2])
    nt.links.new(mix.outputs["Shader"], out.inputs["Surface"])
    mesh = bpy.data.meshes.new("Leaf Card")
    mesh.from_pydata([(-0.5, 0, 0), (0.5, 0, 0), (0.5, 0, 1), (-0.5, 0, 1)], [], [(0, 1, 2, 3)])
    uv = mesh.uv_layers.new(name="UVMap")
    for loop, co in zip(uv.data, [(0, 0), (1, 0), (1, 1), (0, 1)]):
        loop.uv = co
    mesh.materials.append(mat)
    obj = bpy.data.objects.new("Leaf Card", mesh)
    obj.location = (40.0, 0.0, 0.0)
    coll.objects.link(obj)
    return obj


def build(ctx):
    bpy = ctx.bpy
    core = _envfx_module("core.mips")
    size = 512
    pixels = core.make_leaf_card(size, leaves=48, seed=11, slender=0.3)
    image = bpy.data.images.new("Leaf Card", size, size, alpha=True)
    image.pixels.foreach_set((pixels[::-1].astype("float32") / 255.0).ravel())
    image.pack()
    coll = ctx.collection("Mips")
    _card(bpy, coll, image)

    out_dir = os.path.join(ctx.out_dir, "mips")
    s = ctx.scene.envfx.mips
    s.source = "ACTIVE"
    s.image = image
    s.output_dir = out_dir
    s.ref = 0.5
    s.formats = {"DDS", "PNG"}
    s.compare = True
    result = bpy.ops.envfx.mips_bake()
    assert result == {"FINISHED"}, result
    compare = os.path.join(out_dir, "Leaf_Card_compare.png")
    picture = os.path.join(ctx.out_dir, "mips.png")
    shutil.copyfile(compare, picture)
    with open(os.path.join(out_dir, "Leaf_Card_mips.json")) as fh:
        report = json.load(fh)
    for level in report["per_level"]:
        print(f"demo: mips level {level['level']} {level['width']}x{level['height']}: coverage naive "
              f"{level['coverage_naive']:.3f} kept {level['coverage']:.3f} (level 0: {report['target_coverage']:.3f}, "
              f"alpha x{level['alpha_scale']:.2f})", flush=True)
    # the same chain block-compressed, as an engine ships an alpha-tested card: BC1, its alpha cut at the reference
    bc1_dir = os.path.join(ctx.out_dir, "mips_bc1")
    s.output_dir, s.dds, s.formats, s.compare = bc1_dir, "BC1", {"DDS"}, False
    result = bpy.ops.envfx.mips_bake()
    assert result == {"FINISHED"}, result
    with open(os.path.join(bc1_dir, "Leaf_Card_mips.json")) as fh:
        bc1 = json.load(fh)
    worst = max(abs(lv["coverage_dds"] - bc1["target_coverage"]) for lv in bc1["per_level"] if lv["width"] >= 16)
    print(f"demo: mips BC1 DDS ({bc1['dds_format']['name']}): coverage as decoded within {worst:.4f} of level 0's "
          "on every level of 16 x 16 or more", flush=True)
    s.output_dir, s.dds, s.formats, s.compare = out_dir, "RGBA8", {"DDS", "PNG"}, True
    files = sorted(os.path.join(out_dir, f) for f in os.listdir(out_dir))
    return [picture] + files + sorted(os.path.join(bc1_dir, f) for f in os.listdir(bc1_dir))
