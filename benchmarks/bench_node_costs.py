"""What geometry nodes charge for a node: the facts the bend and wind groups are built around.

usage: $(tools/venv.sh 5.0) benchmarks/bench_node_costs.py [--verts 1000000] [--objects 300] [--chain 6]
       [--frames 10] [--rounds 5]
Prints JSON lines:

- ``node_cost_per_vertex``, one per kind of node: on a --verts grid, a Set Position whose offset ends in a chain
  of --chain such nodes, against the same Set Position without the chain; the cost of one node as a fraction of
  a bare Set Position (constant offset). One more line gives the floor: the chain-less offset itself (one dot
  product with the position, scaled) against the bare Set Position. Besides math and vector operations the
  kinds include a dot product (scaled back onto a vector), a Separate XYZ into a Combine XYZ, a named vector
  attribute read (a different attribute each step) and a matrix transform: what the wind's per-vertex
  swing is chosen from.
- ``node_cost_swing``, one per way (``swing_group``) of computing the wind's per-vertex swing from two static
  vectors (dot products as the group does, matrix transforms, Separate XYZ with vector scales or scalar
  multiply-adds) and of its length-keeping rescale (a square root of two dot products, or a normalise and a
  length), each against the bare Set Position (``--no-swing``: skipped).
- ``node_cost_per_object``: on --objects small grids (16 vertices), the extra time per object and per node of a
  chain of single-value nodes (computed once per object) and of a chain of field nodes (computed per vertex, but
  on 16 vertices): what a node costs an object whatever the mesh's size (``--objects 0``: skipped).

Every variant is its own object, all in one scene; an object is re-evaluated by tagging it, the variants take
turns frame by frame and round by round, and each ratio is the median over rounds.
"""

import argparse
import json
import os
import statistics
import sys
import time

import bpy

import bench_bend  # this folder: the grid and the bare Set Position the bend is measured against
from tests.blender import api  # typed handles on the API that check at run time (bench_bend put ROOT on the path)

# kind -> (node type, operation, whether it works on vectors)
KINDS = {
    "math_add": ("ShaderNodeMath", "ADD", False),
    "math_multiply": ("ShaderNodeMath", "MULTIPLY", False),
    "math_maximum": ("ShaderNodeMath", "MAXIMUM", False),
    "math_multiply_add": ("ShaderNodeMath", "MULTIPLY_ADD", False),
    "math_sqrt": ("ShaderNodeMath", "SQRT", False),
    "vector_add": ("ShaderNodeVectorMath", "ADD", True),
    "vector_scale": ("ShaderNodeVectorMath", "SCALE", True),
    "transform_direction": ("FunctionNodeTransformDirection", None, True),
    "math_divide": ("ShaderNodeMath", "DIVIDE", False),
    "math_inverse_sqrt": ("ShaderNodeMath", "INVERSE_SQRT", False),
    "vector_normalize": ("ShaderNodeVectorMath", "NORMALIZE", True),
    "vector_multiply_add": ("ShaderNodeVectorMath", "MULTIPLY_ADD", True),
    # these three are built specially (``Tree.chain``): a dot product of the chain's vector with a constant,
    # scaled back onto a vector; a Separate XYZ into a Combine XYZ (two nodes, counted as one step); a named
    # vector attribute read (a different one each step, written on the grid) added to the chain's vector
    "vector_dot": ("ShaderNodeVectorMath", "DOT_PRODUCT", True),
    "separate_combine": ("ShaderNodeSeparateXYZ", None, True),
    "attribute_read": ("GeometryNodeInputNamedAttribute", None, True),
}
ATTR = "bench_attr_{}"  # the vector attributes the attribute_read chain reads


class Tree:
    """A bare Set Position group (constant offset) whose offset the builders below may replace."""

    def __init__(self, name):
        self.tree = bench_bend.bare_group()
        self.tree.name = name
        self.set_pos = next(n for n in self.tree.nodes if n.bl_idname == "GeometryNodeSetPosition")

    def link(self, a, b):
        self.tree.links.new(a, b)

    def node(self, kind: str, operation: str | None = None) -> bpy.types.Node:
        node = self.tree.nodes.new(kind)
        if operation:
            assert isinstance(node, (bpy.types.ShaderNodeMath, bpy.types.ShaderNodeVectorMath)), kind
            node.operation = operation  # pyright: ignore[reportAttributeAccessIssue] -- KINDS and the builders name operations as plain strings (an unknown one raises here)
        return node

    def scalar_to_offset(self, value):
        scale = self.node("ShaderNodeVectorMath", "SCALE")
        api.socket(scale.inputs[0]).default_value = (0.0, 0.0, 1e-6)
        self.link(value, scale.inputs["Scale"])
        self.link(scale.outputs["Vector"], self.set_pos.inputs["Offset"])

    def chain(self, kind, count):
        """The offset's value through ``count`` nodes of ``kind``: a math chain starts from a dot product of the
        position, a vector chain from the position and ends in that dot product, so with ``count`` = 0 both are
        the floor (one dot product with the position)."""
        node_type, operation, on_vectors = KINDS[kind]
        position = self.node("GeometryNodeInputPosition").outputs[0]
        out = position if on_vectors else self.dot(position)
        for _i in range(count):
            if kind in ("vector_dot", "separate_combine", "attribute_read"):
                out = self.special_step(kind, out, _i)
                continue
            node = self.node(node_type, operation)
            if node_type == "FunctionNodeTransformDirection":
                matrix = self.node("FunctionNodeCombineMatrix")
                for i, sock in enumerate(matrix.inputs):
                    api.socket(sock).default_value = 0.5 + 0.1 * ((i * 7) % 5)
                self.link(out, node.inputs["Direction"])
                self.link(matrix.outputs[0], node.inputs["Transform"])
            else:
                self.link(out, node.inputs[0])
                for sock in list(node.inputs)[1:]:
                    if sock.enabled and not sock.is_linked:
                        api.socket(sock).default_value = (1.0001, 0.9999, 0.5) if sock.type == "VECTOR" else 1.0001
            out = node.outputs[0]
        return self.dot(out) if on_vectors else out

    def special_step(self, kind, out, i):
        if kind == "vector_dot":  # a dot product (float), scaled back onto a vector: the scale is a cheap step
            scale = self.node("ShaderNodeVectorMath", "SCALE")
            api.socket(scale.inputs[0]).default_value = (1.0001, 0.9999, 0.5)
            self.link(self.dot(out), scale.inputs["Scale"])
            return scale.outputs["Vector"]
        if kind == "separate_combine":
            sep = self.node("ShaderNodeSeparateXYZ")
            comb = self.node("ShaderNodeCombineXYZ")
            self.link(out, sep.inputs[0])
            for a, b in zip(sep.outputs, comb.inputs):
                self.link(a, b)
            return comb.outputs[0]
        read = api.of(bpy.types.GeometryNodeInputNamedAttribute, self.node("GeometryNodeInputNamedAttribute"))
        read.data_type = "FLOAT_VECTOR"
        api.socket(read.inputs["Name"]).default_value = ATTR.format(i)
        add = self.node("ShaderNodeVectorMath", "ADD")
        self.link(out, add.inputs[0])
        self.link(read.outputs["Attribute"], add.inputs[1])
        return add.outputs["Vector"]

    def dot(self, vector):
        node = self.node("ShaderNodeVectorMath", "DOT_PRODUCT")
        api.socket(node.inputs[1]).default_value = (1.0, 1.0, 0.0)
        self.link(vector, node.inputs[0])
        return node.outputs["Value"]

    def add(self, a, b):
        node = self.node("ShaderNodeMath", "ADD")
        self.link(a, node.inputs[0])
        self.link(b, node.inputs[1])
        return node.outputs[0]

    def single_chain(self, count):
        """``count`` single-value nodes (computed once per object): additions to the scene's frame."""
        out = self.node("GeometryNodeInputSceneTime").outputs["Frame"]
        for _i in range(count):
            node = self.node("ShaderNodeMath", "ADD")
            self.link(out, node.inputs[0])
            api.socket(node.inputs[1]).default_value = 1.0
            out = node.outputs[0]
        return out


def interleaved(objects, frames, rounds):
    """Per object, the median over rounds of its median re-evaluation time in the round (tag it, update)."""
    dg = bpy.context.evaluated_depsgraph_get()
    dg.update()
    per_round = {name: [] for name in objects}
    for _round in range(rounds):
        times = {name: [] for name in objects}
        for i in range(frames + 2):
            for name, objs in objects.items():
                for obj in objs:
                    obj.update_tag(refresh={"DATA"})
                t0 = time.perf_counter()
                dg.update()
                if i >= 2:
                    times[name].append(time.perf_counter() - t0)
        for name in objects:
            per_round[name].append(statistics.median(times[name]))
    return per_round


def per_vertex(args, env):
    side = int(round(args.verts ** 0.5))
    variants = {"bare": None, "floor": ("math_add", 0)}
    variants.update({kind: (kind, args.chain) for kind in KINDS})
    objects = {}
    for name, spec in variants.items():
        obj = bench_bend.grid(f"PV {name}", side)
        if name == "attribute_read":
            import numpy as np

            rng = np.random.default_rng(0)
            for i in range(args.chain):
                values = rng.normal(size=3 * side * side).astype(np.float32)
                attr = api.mesh(obj).attributes.new(ATTR.format(i), "FLOAT_VECTOR", "POINT")
                api.of(bpy.types.FloatVectorAttribute, attr).data.foreach_set("vector", values)
        t = Tree(f"PV {name}")
        if spec is not None:
            t.scalar_to_offset(t.chain(*spec))
        api.of(bpy.types.NodesModifier, obj.modifiers.new("Nodes", "NODES")).node_group = t.tree
        objects[name] = [obj]
    got = interleaved(objects, args.frames, args.rounds)
    ratios = {name: [t / b for t, b in zip(got[name], got["bare"])] for name in objects}
    print(json.dumps({"bench": "node_cost_per_vertex", "kind": "floor", "vertices": side * side,
                      "ratio_to_bare": round(statistics.median(ratios["floor"]), 3), **env}), flush=True)
    for kind in KINDS:
        per_node = [(r - f) / args.chain for r, f in zip(ratios[kind], ratios["floor"])]
        print(json.dumps({"bench": "node_cost_per_vertex", "kind": kind, "vertices": side * side,
                          "chain": args.chain, "per_node_of_bare": round(statistics.median(per_node), 4),
                          "min": round(min(per_node), 4), "max": round(max(per_node), 4), **env}), flush=True)
    for objs in objects.values():
        for obj in objs:
            bpy.data.objects.remove(obj)


# the six per-asset vectors the wind's swing weighs the two static vectors' numbers by (any will do)
SWING_VECTORS = ((0.1, 0.2, 0.3), (0.3, -0.1, 0.2), (0.05, 0.1, -0.2), (0.2, 0.1, 0.0), (-0.1, 0.3, 0.1),
                 (0.0, 0.2, 0.1))
SWINGS = ("reads", "dots", "transforms", "separate_scales", "separate_madds", "turn_sqrt", "turn_normalize")


def swing_group(kind):
    """The ways of computing the wind's per-vertex swing ``sum_k c_k u_k`` (six numbers ``c`` from two static
    vectors A and B, six per-asset vectors ``u``) and its length-keeping rescale, as a Set Position offset (scaled
    by the frame): ``reads`` only adds A and B; ``dots`` forms each axis as two dot products (the wind group);
    ``transforms`` as two matrix transforms of A and B; ``separate_scales`` separates A and B and scales the
    vectors ``u``; ``separate_madds`` separates them and sums each axis with scalar multiply-adds.
    ``turn_sqrt`` rescales A + frame B to the length of A with a square root of two dot products (the wind's
    rescale), ``turn_normalize`` with a normalise and a length."""
    t = Tree(f"Swing {kind}")
    b = t.tree.nodes.new

    def attr(name):
        node = api.of(bpy.types.GeometryNodeInputNamedAttribute, b("GeometryNodeInputNamedAttribute"))
        node.data_type = "FLOAT_VECTOR"
        api.socket(node.inputs["Name"]).default_value = name
        return node.outputs["Attribute"]

    def op(kind_, operation, *inputs, scale=None):
        node = t.node(kind_, operation)
        for sock, value in zip([s for s in node.inputs if s.enabled], inputs):
            if isinstance(value, bpy.types.NodeSocket):
                t.link(value, sock)
            else:
                api.socket(sock).default_value = value
        if scale is not None:
            t.link(scale, node.inputs["Scale"])
        return node.outputs["Value" if operation in ("DOT_PRODUCT", "LENGTH") else 0]

    def vm(operation, *inputs, scale=None):
        return op("ShaderNodeVectorMath", operation, *inputs, scale=scale)

    def combine(axes):
        node = b("ShaderNodeCombineXYZ")
        for sock, value in zip(node.inputs, axes):
            t.link(value, sock)
        return node.outputs[0]

    def separate(vec):
        node = b("ShaderNodeSeparateXYZ")
        t.link(vec, node.inputs[0])
        return list(node.outputs)

    frame = op("ShaderNodeMath", "MULTIPLY", b("GeometryNodeInputSceneTime").outputs["Frame"], 1e-4)
    a_, b_ = attr(ATTR.format(0)), attr(ATTR.format(1))
    us = SWING_VECTORS
    if kind == "reads":
        off = vm("ADD", a_, b_)
    elif kind == "dots":
        off = combine([op("ShaderNodeMath", "ADD", vm("DOT_PRODUCT", a_, tuple(u[i] for u in us[:3])),
                          vm("DOT_PRODUCT", b_, tuple(u[i] for u in us[3:]))) for i in range(3)])
    elif kind == "transforms":
        parts = []
        for vec, cols in ((a_, us[:3]), (b_, us[3:])):
            matrix = t.node("FunctionNodeCombineMatrix")
            for c, col in enumerate(cols):
                for r, x in enumerate(col):
                    api.socket(matrix.inputs[4 * c + r]).default_value = x
            node = t.node("FunctionNodeTransformDirection")
            t.link(vec, node.inputs["Direction"])
            t.link(matrix.outputs[0], node.inputs["Transform"])
            parts.append(node.outputs[0])
        off = vm("ADD", *parts)
    elif kind == "separate_scales":
        off = None
        for c, u in zip(separate(a_) + separate(b_), us):
            term = vm("SCALE", u, scale=c)
            off = term if off is None else vm("ADD", off, term)
    elif kind == "separate_madds":
        cs = separate(a_) + separate(b_)
        axes = []
        for i in range(3):
            acc = op("ShaderNodeMath", "MULTIPLY", cs[0], us[0][i])
            for c, u in zip(cs[1:], us[1:]):
                acc = op("ShaderNodeMath", "MULTIPLY_ADD", c, u[i], acc)
            axes.append(acc)
        off = combine(axes)
    else:
        q = vm("ADD", a_, vm("SCALE", b_, scale=frame))
        if kind == "turn_sqrt":
            ratio = op("ShaderNodeMath", "DIVIDE", vm("DOT_PRODUCT", a_, a_), vm("DOT_PRODUCT", q, q))
            turned = vm("SCALE", q, scale=op("ShaderNodeMath", "SQRT", ratio))
        else:
            turned = vm("SCALE", vm("NORMALIZE", q), scale=vm("LENGTH", a_))
        off = vm("SUBTRACT", turned, a_)
    t.link(vm("SCALE", off, scale=frame), t.set_pos.inputs["Offset"])
    return t.tree


def per_swing(args, env):
    """``node_cost_swing``: every way of ``swing_group`` on its own --verts grid holding two random static vectors,
    against the bare Set Position, interleaved (the ratio's median and quartiles over rounds)."""
    import numpy as np

    side = int(round(args.verts ** 0.5))
    rng = np.random.default_rng(1)
    objects = {}
    for kind in ("bare",) + SWINGS:
        obj = bench_bend.grid(f"SW {kind}", side)
        for i in range(2):
            values = rng.normal(size=3 * side * side).astype(np.float32)
            attr = api.mesh(obj).attributes.new(ATTR.format(i), "FLOAT_VECTOR", "POINT")
            api.of(bpy.types.FloatVectorAttribute, attr).data.foreach_set("vector", values)
        if kind == "bare":
            tree = Tree("SW bare").tree
        else:
            tree = swing_group(kind)
        api.of(bpy.types.NodesModifier, obj.modifiers.new("Nodes", "NODES")).node_group = tree
        objects[kind] = [obj]
    got = interleaved(objects, args.frames, args.rounds)
    for kind in SWINGS:
        ratios = [t / b for t, b in zip(got[kind], got["bare"])]
        q1, med, q3 = np.percentile(ratios, [25, 50, 75])
        print(json.dumps({"bench": "node_cost_swing", "kind": kind, "vertices": side * side,
                          "ratio_to_bare": round(float(med), 3), "q1": round(float(q1), 3), "q3": round(float(q3), 3),
                          "min": round(min(ratios), 3), "max": round(max(ratios), 3), "rounds": args.rounds,
                          **env}), flush=True)
    for objs in objects.values():
        for obj in objs:
            bpy.data.objects.remove(obj)


def per_object(args, env):
    nodes = 4 * args.chain
    # the same offset (a dot product of the position plus the frame) with and without ``nodes`` more nodes
    variants = {
        "base": lambda t: t.scalar_to_offset(t.add(t.chain("math_add", 0), t.single_chain(0))),
        "single_values": lambda t: t.scalar_to_offset(t.add(t.chain("math_add", 0), t.single_chain(nodes))),
        "field_nodes": lambda t: t.scalar_to_offset(t.add(t.chain("math_add", nodes), t.single_chain(0))),
    }
    objects = {}
    for name, build in variants.items():
        t = Tree(f"PO {name}")
        build(t)
        objs = []
        for i in range(args.objects):
            obj = bench_bend.grid(f"PO {name} {i}", 4)
            api.of(bpy.types.NodesModifier, obj.modifiers.new("Nodes", "NODES")).node_group = t.tree
            objs.append(obj)
        objects[name] = objs
    got = interleaved(objects, args.frames, args.rounds)
    for name in ("single_values", "field_nodes"):
        extra = [(t - b) / args.objects / nodes * 1e6 for t, b in zip(got[name], got["base"])]
        print(json.dumps({"bench": "node_cost_per_object", "kind": name, "objects": args.objects,
                          "vertices_each": 16, "nodes": nodes, "us_per_node_per_object":
                          round(statistics.median(extra), 3), "min": round(min(extra), 3),
                          "max": round(max(extra), 3), **env}), flush=True)


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--verts", type=int, default=1_000_000)
    parser.add_argument("--objects", type=int, default=300)
    parser.add_argument("--chain", type=int, default=6)
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-swing", action="store_true", help="leave out the node_cost_swing lines")
    args = parser.parse_args(argv)
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    env = {"blender": bpy.app.version_string, "loadavg_1min": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}
    per_vertex(args, env)
    if not args.no_swing:
        per_swing(args, env)
    if args.objects > 0:
        per_object(args, env)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
