"""The node graph of "EnvFX Snow Trails" (geometry nodes, live trails), built stage by stage.

"EnvFX Snow Trails" is ``core.snow``'s trail state evaluated per frame in a simulation zone:

- the actors are one point each, in one point cloud whose values Index Switch nodes pick by point index (each
  actor of ``scene.envfx.snow.actors``: its world location from the modifier's "Actor i" input, driven by the
  actor's transform (``drive_modifier``), minus its bottom offset; radius, depth and a key (one per actor name)
  as point attributes). ``_build_actors`` rebuilds only this part
  of the group, in place, when the actors or their sizes change (``ensure_trails``; the app handlers call it
  through ``operators.snow.follow_actors`` at every frame change): the simulation zone is not touched, so the
  trails already carved stay. Driving the modifier's inputs, not values inside the group, keeps a frame from
  being a change of the group (which Blender would re-analyse every frame);
- inside the zone the previous frame's actor points are the state "Actors", matched to this frame's by key
  (actors come and go, their order changes; a new actor starts where it is); a mesh of one edge per actor
  (previous -> current bottom point, flattened to z = 0) is the path. A table of cells (``CELLS`` x ``CELLS``
  over the snow's bounds) flags the cells a path (or an occluder) can reach; the cells' proximity search runs
  only in the blocks of a coarse table (``COARSE`` x ``COARSE`` cells a block) near a path;
- the trail state is kept off the snow mesh (which passes the zone unchanged, so none of its 1M-vertex arrays
  is copied into the simulation's cache): when the simulation starts each vertex gets its cell (``snow_cell``)
  and its rank among its cell's vertices (``snow_slot``), and the vertices sorted by cell become the point
  cloud "Sorted" (with per cell its first sorted point and vertex count, "Cells"). The state "State" is a point
  cloud of the vertices of the "held" cells (cells a path or an occluder has reached), cell after cell (the point's
  position is its state (down, rim, pushed now), ``base.STATE``; attributes ``sidx`` = the vertex's sorted point,
  ``cell``); the state "Held" is
  the cell table of block starts (``d1`` = start + 1, 0 = no state). A cell reached for the first time gets a
  block appended; the blocks of cells held before stay where they are, so a frame's work is the stamp near this
  frame's paths, not a rebuild of every cell ever held. The held points of the near cells take the actor whose
  path is nearest (as ``core.snow.stamp_points`` does): the one nearest to their cell's centre when that path is
  apart from every other (farther than twice the reach), else their own Sample Nearest on the path edges (a
  point's vertex position is gathered from "Sorted"); then the stamp, vertical fade, persistence and occluders
  follow the core's formulas node for node;
- after the zone the vertices of held cells read their state at block start + rank (two gathers, no search)
  and move by ``max(rim - down, -0.98 snow_thickness)`` along world Z; with the camera fade every vertex moves
  by ``fade * trail + (1 - fade) * (-0.98 snow_thickness)``, so beyond Camera Fade End the snow lies flat on the
  ground (``core.snow.shown_offset``; snow wholly within Camera Fade Start, or no active camera: only the
  trails).

Numbers the user tweaks (rim, fades, refill) are Value nodes driven by ``scene.envfx.snow``.
"""

from __future__ import annotations

import types

from .. import common
from .base import ACTORS_KEY, ACTORS_NODE, CELLS, COARSE, DRIVEN, GRAVITY, GROUND_KEEP, TRAIL_ATTRIBUTE, SnowBuilder
from .puffs import puffs_shown, puffs_step

class _Shared(types.SimpleNamespace):
    """The sockets and nodes that a stage of ``_build`` hands on to the later ones."""

    def get(self, names: str) -> tuple:
        return tuple(getattr(self, n) for n in names.split())

    def put(self, **values):
        vars(self).update(values)


def _grid(b, mn, mx, tag):
    """(its low corner separated, the cell size, the height, the middle height) of the CELLS x CELLS lookup table
    over the box ``mn``..``mx``."""
    ext = b.node("ShaderNodeSeparateXYZ", f"{tag} Extent")
    b.link(b.vmath("SUBTRACT", mx, mn), ext.inputs[0])
    cell = b.math("MAXIMUM", b.math("DIVIDE", b.math("MAXIMUM", ext.outputs["X"], ext.outputs["Y"]),
                                    float(CELLS)), 1e-9, label=f"{tag} Cell Size")
    lo = b.node("ShaderNodeSeparateXYZ", f"{tag} Lo")
    b.link(mn, lo.inputs[0])
    mid_z = b.math("MULTIPLY_ADD", ext.outputs["Z"], 0.5, lo.outputs["Z"], label=f"{tag} Mid Z")
    return lo, cell, ext.outputs["Z"], mid_z


def _ival(b, geometry, name, idx, label):
    return b.sample_index(geometry, b.named(name, "INT", label=f"Read {label}").outputs["Attribute"], idx,
                          "INT", label=label)


def _build(tree, occluders: bool, numpy: bool = False):
    """The live trails group: its stages, in the order they make their nodes (names, locations and the join
    orders depend on it). With ``numpy`` (the scene's Trails Engine is Numpy) the group is the Numpy engine's
    display alone (``_numpy_display``): no simulation zone, so nothing in it depends on the frame."""
    b = SnowBuilder(tree)
    s = _Shared()
    _inputs(b, tree, s)
    if numpy:
        _numpy_display(b, s)
        return
    _zone_and_paths(b, s)
    _stamp_fields(b, s)
    _cell_sort(b, tree, s)
    _near_cells(b, s, occluders)
    _grow_state(b, s, occluders)
    _stamp_state(b, s, occluders)
    _puffs_and_display(b, s)
    b.link(s.sim_shown, s.group_out.inputs[0])


def _inputs(b, tree, s):
    """The group's sockets, its driven values, the actor points' join, the occluders' footprint and the
    snow object's world transform (``P``: the world position of the vertex)."""
    common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    tree.interface.new_panel("Actors", default_closed=True)
    tree.pop(ACTORS_KEY, None)  # the actors are built by _build_actors
    group_in = b.node("NodeGroupInput", "Group Input", location=(-2000, 0))
    group_out = b.node("NodeGroupOutput", "Group Output", location=(3000, 0))
    values = {label: b.value(label, 0.0) for label in DRIVEN}
    for i, label in enumerate(DRIVEN):
        values[label].node.location = (-2000, -200 - 90 * i)
    values[GRAVITY] = b.value(GRAVITY, -9.81)

    # actors: one point per actor at its bottom, with radius, depth and key (_build_actors adds them)
    joined = b.node("GeometryNodeJoinGeometry", ACTORS_NODE, location=(-1400, 600))
    actors_now = joined.outputs[0]

    # occluders: their top-down footprint (flattened to z = 0)
    occ_info = b.node("GeometryNodeCollectionInfo", "Occluders", transform_space="ORIGINAL")
    occ_info.inputs["Separate Children"].default_value = False
    occ_info.inputs["Reset Children"].default_value = False
    realize = b.node("GeometryNodeRealizeInstances", "Occluders Real")
    b.link(occ_info.outputs[0], realize.inputs[0])
    occ_flat = b.node("GeometryNodeSetPosition", "Occluders Flat")
    b.link(realize.outputs[0], occ_flat.inputs["Geometry"])
    b.link(b.flat(b.node("GeometryNodeInputPosition", "Occ Pos").outputs[0], "Occ"), occ_flat.inputs["Position"])

    # world transform of the snow object
    self_obj = b.node("GeometryNodeSelfObject", "Self")
    self_info = b.node("GeometryNodeObjectInfo", "Self Info", transform_space="ORIGINAL")
    b.link(self_obj.outputs[0], self_info.inputs["Object"])
    matrix = self_info.outputs["Transform"]
    position = b.node("GeometryNodeInputPosition", "Position").outputs[0]
    to_world = b.node("FunctionNodeTransformPoint", "To World")
    b.link(position, to_world.inputs["Vector"])
    b.link(matrix, to_world.inputs["Transform"])
    P = to_world.outputs[0]

    s.put(P=P, actors_now=actors_now, group_in=group_in, group_out=group_out, matrix=matrix, occ_flat=occ_flat,
          to_world=to_world, values=values)


def _zone_and_paths(b, s):
    """The simulation zone, the actors' previous points matched by key, and the mesh of their paths (one edge
    per actor, previous -> current bottom point, flattened)."""
    group_in, actors_now = s.get("group_in actors_now")
    # --- simulation zone ---
    sim_in = b.node("GeometryNodeSimulationInput", "Sim In", location=(-600, 0))
    sim_out = b.node("GeometryNodeSimulationOutput", "Sim Out", location=(2200, 0))
    sim_in.pair_with_output(sim_out)
    sim_out.state_items.new("GEOMETRY", "Actors")
    for item in ("State", "Held", "Sorted", "Cells", "Puffs"):
        sim_out.state_items.new("GEOMETRY", item)
    b.link(group_in.outputs[0], sim_in.inputs["Geometry"])
    b.link(actors_now, sim_in.inputs["Actors"])
    snow_geo = sim_in.outputs["Geometry"]
    actors_prev = sim_in.outputs["Actors"]
    dt = sim_in.outputs["Delta Time"]

    # the actors' previous points matched by key (actors come and go while the simulation runs, and their order
    # changes): "Actors Before" has the points of "Actors" at their previous positions; an actor that was not
    # there the frame before starts where it is
    key_read = b.named("key", "INT", label="Read Actor Key").outputs["Attribute"]
    keyed_prev = b.node("GeometryNodeSetPosition", "Previous By Key")
    b.link(actors_prev, keyed_prev.inputs["Geometry"])
    b.link(b.combine_xyz(key_read, 0.0, 0.0, label="Key Position"), keyed_prev.inputs["Position"])
    same_key = b.node("GeometryNodeSampleNearest", "Same Key", domain="POINT")
    b.link(keyed_prev.outputs[0], same_key.inputs["Geometry"])
    b.link(b.combine_xyz(key_read, 0.0, 0.0, label="Key Sample"), same_key.inputs["Sample Position"])
    j_prev = same_key.outputs["Index"]
    was_there = b.compare("EQUAL", b.sample_index(actors_prev, key_read, j_prev, "INT", label="Previous Key"),
                          key_read, label="Was There")
    matched = b.node("GeometryNodeSetPosition", "Actors Before")
    b.link(actors_now, matched.inputs["Geometry"])
    b.link(was_there, matched.inputs["Selection"])
    b.link(b.sample_index(actors_prev, b.node("GeometryNodeInputPosition", "Previous Pos").outputs[0], j_prev,
                          "FLOAT_VECTOR", label="Previous Position"), matched.inputs["Position"])
    actors_before = matched.outputs[0]

    # path mesh: vertex 2i = previous bottom of actor i, 2i+1 = current; edge i joins them
    size = b.node("GeometryNodeAttributeDomainSize", "Actor Count", component="POINTCLOUD")
    b.link(actors_now, size.inputs[0])
    line = b.node("GeometryNodeMeshLine", "Path Line", mode="OFFSET")
    b.link(b.math("MULTIPLY", size.outputs["Point Count"], 2.0, label="Twice"), line.inputs["Count"])
    index = b.node("GeometryNodeInputIndex", "Index").outputs[0]
    actor_of_vertex = b.math("FLOOR", b.math("DIVIDE", index, 2.0), label="Actor Of Vertex")
    is_cur = b.math("FLOORED_MODULO", index, 2.0, label="Is Current")
    pos_in = b.node("GeometryNodeInputPosition", "Actor Pos").outputs[0]
    prev_v = b.sample_index(actors_before, pos_in, actor_of_vertex, "FLOAT_VECTOR", label="Path Prev")
    cur_v = b.sample_index(actors_now, pos_in, actor_of_vertex, "FLOAT_VECTOR", label="Path Cur")
    path_pos = b.vmath("ADD", prev_v, b.vmath("SCALE", b.vmath("SUBTRACT", cur_v, prev_v), scale=is_cur), label="Path")
    set_path = b.node("GeometryNodeSetPosition", "Path Set")
    b.link(line.outputs[0], set_path.inputs["Geometry"])
    b.link(b.flat(path_pos, "Path"), set_path.inputs["Position"])
    delete = b.node("GeometryNodeDeleteGeometry", "Odd Edges", domain="EDGE", mode="EDGE_FACE")
    b.link(set_path.outputs[0], delete.inputs["Geometry"])
    b.link(b.math("FLOORED_MODULO", index, 2.0, label="Odd"), delete.inputs["Selection"])
    paths = delete.outputs[0]

    s.put(actors_before=actors_before, dt=dt, index=index, paths=paths, pos_in=pos_in, sim_in=sim_in, sim_out=sim_out,
          size=size, snow_geo=snow_geo)


def _stamp_fields(b, s):
    """The stamp of the nearest path at a point (``core.snow.stamp_points``) and the trail update from the old
    state (``core.snow.trail_update``), as fields."""
    paths, P, actors_before, pos_in, actors_now, values, dt = s.get("paths P actors_before pos_in actors_now values dt")
    nearest = b.node("GeometryNodeSampleNearest", "Nearest Path", domain="EDGE")
    b.link(paths, nearest.inputs["Geometry"])
    b.link(b.flat(P, "P"), nearest.inputs["Sample Position"])
    # the actor whose path is nearest (stored on the points near a path, see "Point Edge" below)
    e = b.named("edge", "INT", label="Read Point Edge").outputs["Attribute"]
    A = b.sample_index(actors_before, pos_in, e, "FLOAT_VECTOR", label="A")
    B = b.sample_index(actors_now, pos_in, e, "FLOAT_VECTOR", label="B")
    R = b.sample_index(actors_now, b.node("GeometryNodeInputRadius", "Radius").outputs[0], e, label="R")
    D = b.sample_index(actors_now, b.named("depth").outputs["Attribute"], e, label="D")

    ab = b.flat(b.vmath("SUBTRACT", B, A), "AB")
    ap = b.flat(b.vmath("SUBTRACT", P, A), "AP")
    den = b.math("MAXIMUM", b.vmath("DOT_PRODUCT", ab, ab), 1e-20, label="Den")
    t = b.clamp01(b.math("DIVIDE", b.vmath("DOT_PRODUCT", ap, ab), den), label="T")
    d = b.vmath("LENGTH", b.vmath("SUBTRACT", ap, b.vmath("SCALE", ab, scale=t)), label="Dist")
    u = b.math("DIVIDE", d, b.math("MAXIMUM", R, 1e-12), label="U")
    cover = b.math("MAXIMUM", b.math("SUBTRACT", 1.0, b.math("MULTIPLY", u, u)), 0.0, label="Cover")
    qa = b.math("DIVIDE", b.math("SUBTRACT", u, 1.0), values["Rim Width"], label="Rim X")
    q = b.math("MAXIMUM", b.math("SUBTRACT", 1.0, b.math("MULTIPLY", qa, qa)), 0.0, label="Rim Q")
    rim = b.math("MULTIPLY", b.math("MULTIPLY", values["Rim Height"], D), b.math("MULTIPLY", q, q), label="Rim")
    sep_a = b.node("ShaderNodeSeparateXYZ", "A Sep")
    b.link(A, sep_a.inputs[0])
    sep_b = b.node("ShaderNodeSeparateXYZ", "B Sep")
    b.link(B, sep_b.inputs[0])
    sep_p = b.node("ShaderNodeSeparateXYZ", "P Sep")
    b.link(P, sep_p.inputs[0])
    zc = b.math("MULTIPLY_ADD", t, b.math("SUBTRACT", sep_b.outputs["Z"], sep_a.outputs["Z"]), sep_a.outputs["Z"],
                label="Zc")
    h = b.math("SUBTRACT", zc, sep_p.outputs["Z"], label="H")
    below = b.math("SUBTRACT", b.math("MULTIPLY", h, -1.0), b.math("MULTIPLY", R, 2.0), label="Below")
    beyond = b.math("MAXIMUM", b.math("MAXIMUM", h, below), 0.0, label="Beyond")
    w = b.clamp01(b.math("SUBTRACT", 1.0, b.math("DIVIDE", beyond, values["Fade Height"])), label="W")
    down_s = b.math("MULTIPLY", b.math("MULTIPLY", D, cover), w, label="Down S")
    rim_s = b.math("MULTIPLY", rim, w, label="Rim S")
    cw = b.math("MULTIPLY", cover, w, label="Cover W")

    keep = b.clamp01(b.math("SUBTRACT", 1.0, b.math("MULTIPLY", values["Refill Rate"], dt)), label="Keep")
    old = b.node("ShaderNodeSeparateXYZ", "Old State")
    b.link(b.node("GeometryNodeInputPosition", "Read State").outputs[0], old.inputs[0])  # STATE: the position
    old_down, old_rim = old.outputs["X"], old.outputs["Y"]
    kd = b.math("MULTIPLY", keep, old_down, label="Kept Down")
    new_down = b.math("MAXIMUM", kd, down_s, label="New Down")
    inside = b.clamp01(b.math("SUBTRACT", 1.0, b.math("DIVIDE", kd, b.math("MAXIMUM", D, 1e-12))), label="Inside")
    kept_rim = b.math("MULTIPLY", b.math("MULTIPLY", keep, old_rim), b.math("SUBTRACT", 1.0, cw), label="Kept Rim")
    new_rim = b.math("MAXIMUM", kept_rim, b.math("MULTIPLY", rim_s, inside), label="New Rim")

    thick_node = b.named("snow_thickness")
    s.put(kd=kd, keep=keep, nearest=nearest, new_down=new_down, new_rim=new_rim, old_down=old_down, old_rim=old_rim,
          thick_node=thick_node)


def _cell_sort(b, tree, s):
    """Once, when the simulation starts: each vertex's cell of the lookup table, its rank in the cell, the
    vertices as points sorted by cell ("Sorted") and per cell its first sorted point and count ("Cells")."""
    group_in, index, sim_in = s.get("group_in index sim_in")

    # coarse lookup table: CELLS x CELLS cells over the snow's bounding box (object space), flagging the cells
    # a path (or an occluder) may reach; only the snow vertices in flagged cells evaluate the nearest-path
    # search and the occluder ray (a store's value field is evaluated for its selection only). The bound is
    # conservative, so the result is exactly that of evaluating every vertex. Each vertex's cell is computed
    # once, when the simulation starts (attribute snow_cell).
    start_bbox = b.node("GeometryNodeBoundBox", "Start Bounds")
    b.link(group_in.outputs[0], start_bbox.inputs["Geometry"])
    lo0, cell0, _, _ = _grid(b, start_bbox.outputs["Min"], start_bbox.outputs["Max"], "Start")
    p_obj = b.node("ShaderNodeSeparateXYZ", "P Object")
    b.link(b.node("GeometryNodeInputPosition", "Start Pos").outputs[0], p_obj.inputs[0])

    def cell_of(axis_value, lo_value):
        c = b.math("FLOOR", b.math("DIVIDE", b.math("SUBTRACT", axis_value, lo_value), cell0))
        return b.math("MINIMUM", b.math("MAXIMUM", c, 0.0), float(CELLS - 1))

    vertex_cell = b.math("MULTIPLY_ADD", cell_of(p_obj.outputs["Y"], lo0.outputs["Y"]), float(CELLS),
                         cell_of(p_obj.outputs["X"], lo0.outputs["X"]), label="Vertex Cell")
    start_geo = b.store(group_in.outputs[0], "snow_cell", vertex_cell, data_type="INT", label="Store Cell")
    # once, when the simulation starts: each vertex's rank among its cell's vertices (snow_slot), the vertices
    # as points sorted by cell ("Sorted"), and per cell its first sorted point and vertex count ("Cells")
    cell_r = b.named("snow_cell", "INT", label="Read Start Cell").outputs["Attribute"]
    rank = b.node("GeometryNodeAccumulateField", "Cell Rank", data_type="INT", domain="POINT")
    rank.inputs[0].default_value = 1
    b.link(cell_r, rank.inputs[1])
    start_geo = b.store(start_geo, "snow_slot", rank.outputs["Trailing"], data_type="INT",
                        label="Store Slot")
    sort = b.node("GeometryNodeSortElements", "Sort By Cell", domain="POINT")
    b.link(start_geo, sort.inputs["Geometry"])
    b.link(cell_r, sort.inputs["Group ID"])
    # the rank as the weight: exact in float for any cell size, and the same order as the index
    b.link(b.named("snow_slot", "INT", label="Read Start Slot").outputs["Attribute"], sort.inputs["Sort Weight"])
    as_points = b.node("GeometryNodeMeshToPoints", "Sorted Points", mode="VERTICES")
    b.link(sort.outputs[0], as_points.inputs["Mesh"])
    sorted_geo = b.store(as_points.outputs[0], "start", index, data_type="INT", label="Store Sorted Index")
    sorted_geo = b.store(sorted_geo, "count", rank.outputs["Total"], data_type="INT", label="Store Cell Total")
    firsts = b.node("GeometryNodeDeleteGeometry", "Cell Firsts", domain="POINT", mode="ALL")
    b.link(sorted_geo, firsts.inputs["Geometry"])
    b.link(b.math("GREATER_THAN", b.named("snow_slot", "INT", label="Read Sorted Slot").outputs["Attribute"], 0.0),
           firsts.inputs["Selection"])
    firsts_x = b.node("GeometryNodeSetPosition", "Firsts At Cell")
    b.link(firsts.outputs[0], firsts_x.inputs["Geometry"])
    b.link(b.combine_xyz(cell_r, 0.0, 0.0, label="Firsts X"), firsts_x.inputs["Position"])
    cell_pts = b.node("GeometryNodePoints", "Cells Static")
    cell_pts.inputs["Count"].default_value = CELLS * CELLS
    b.link(b.combine_xyz(index, 0.0, 0.0, label="Cell X Pos"), cell_pts.inputs["Position"])
    fn = b.node("GeometryNodeSampleNearest", "First Of Cell", domain="POINT")
    b.link(firsts_x.outputs[0], fn.inputs["Geometry"])
    b.link(b.node("GeometryNodeInputPosition", "Cell X").outputs[0], fn.inputs["Sample Position"])
    j = fn.outputs["Index"]
    match = b.math("COMPARE", b.sample_index(firsts_x.outputs[0], cell_r, j, "INT", label="First Cell"), index, 0.0,
                   label="Cell Match")
    cells_geo = b.store(cell_pts.outputs[0], "start",
                        b.math("MULTIPLY", match, b.sample_index(firsts_x.outputs[0], b.named(
                            "start", "INT", label="Read First Start").outputs["Attribute"], j, "INT",
                            label="First Start")), data_type="INT", label="Store Cell Start")
    cells_geo = b.store(cells_geo, "count",
                        b.math("MULTIPLY", match, b.sample_index(firsts_x.outputs[0], b.named(
                            "count", "INT", label="Read First Count").outputs["Attribute"], j, "INT",
                            label="First Count")), data_type="INT", label="Store Cell Count")
    for name in ("Min", "Max"):
        cells_geo = b.store(cells_geo, f"bound_{name.lower()}", start_bbox.outputs[name], data_type="FLOAT_VECTOR",
                            label=f"Store Bound {name}")
    b.link(sorted_geo, sim_in.inputs["Sorted"])
    b.link(cells_geo, sim_in.inputs["Cells"])
    for link in list(tree.links):
        if link.to_node == sim_in and link.to_socket.name == "Geometry":
            tree.links.remove(link)
    b.link(start_geo, sim_in.inputs["Geometry"])


def _near_cells(b, s, occluders):
    """The table of the cells a path (or an occluder) may reach this frame, searched only in the blocks of the
    coarse table near a path, with each near cell's nearest path and whether it is apart from the others."""
    (sim_in, index, matrix, actors_now, values, paths, actors_before, pos_in, size, occ_flat) = s.get(
        "sim_in index matrix actors_now values paths actors_before pos_in size occ_flat")

    # the snow's bounds, measured once when the simulation starts (kept on the "Cells" state)
    def start_bound(name):
        return b.sample_index(sim_in.outputs["Cells"], b.named(name, "FLOAT_VECTOR", label=f"Read {name}")
                              .outputs["Attribute"], 0, "FLOAT_VECTOR", label=f"Snow {name}")

    lo, cell, ext_z, mid_z = _grid(b, start_bound("bound_min"), start_bound("bound_max"), "Snow")
    def centres(n, size, tag):
        """World XY centres (z = 0) of an n x n grid of cells of ``size`` over the snow's bounds, by index."""
        gx = b.math("FLOORED_MODULO", index, float(n), label=f"{tag} X")
        gy = b.math("FLOOR", b.math("DIVIDE", index, float(n)), label=f"{tag} Y")
        centre_obj = b.combine_xyz(b.math("MULTIPLY_ADD", b.math("ADD", gx, 0.5), size, lo.outputs["X"]),
                                   b.math("MULTIPLY_ADD", b.math("ADD", gy, 0.5), size, lo.outputs["Y"]), mid_z,
                                   label=f"{tag} Centre")
        world = b.node("FunctionNodeTransformPoint", f"{tag} Centre World")
        b.link(centre_obj, world.inputs["Vector"])
        b.link(matrix, world.inputs["Transform"])
        return b.flat(world.outputs[0], tag), gx, gy

    table = b.node("GeometryNodePoints", "Cell Table")
    table.inputs["Count"].default_value = CELLS * CELLS
    centre, cx, cy = centres(CELLS, cell, "Cell")
    b.link(centre, table.inputs["Position"])

    def axis_xy(vec, label):
        node = b.node("FunctionNodeTransformDirection", label)
        b.link(matrix, node.inputs["Transform"])
        node.inputs["Direction"].default_value = vec
        return b.flat(node.outputs[0], label)

    # how far (world XY) a point of a cell can be from the cell's centre: the farthest corner of the cell's
    # box (cell x cell x snow height, around the centre), as object axes seen from above
    ax, ay = axis_xy((1.0, 0.0, 0.0), "Axis X"), axis_xy((0.0, 1.0, 0.0), "Axis Y")
    xy_reach = b.math("MAXIMUM", b.vmath("LENGTH", b.vmath("ADD", ax, ay)),
                      b.vmath("LENGTH", b.vmath("SUBTRACT", ax, ay)), label="Cell Diagonal")
    z_reach = b.vmath("LENGTH", axis_xy((0.0, 0.0, 1.0), "Axis Z"), label="Height Reach")
    z_half = b.math("MULTIPLY", ext_z, z_reach, label="Height Half")
    half_cell = b.math("MULTIPLY", b.math("MULTIPLY_ADD", cell, xy_reach, z_half), 0.5001, label="Half Cell")
    stat = b.node("GeometryNodeAttributeStatistic", "Max Radius", data_type="FLOAT", domain="POINT")
    b.link(actors_now, stat.inputs["Geometry"])
    b.link(b.node("GeometryNodeInputRadius", "Actor Radius").outputs[0], stat.inputs["Attribute"])
    reach = b.math("MULTIPLY", stat.outputs["Max"], b.math("ADD", values["Rim Width"], 1.0), label="Reach")
    reach_max = b.math("ADD", reach, half_cell, label="Reach + Half Cell")

    def path_distance(tag):
        prox = b.node("GeometryNodeProximity", f"{tag} Proximity", target_element="EDGES")
        b.link(paths, prox.inputs[0])
        b.link(b.node("GeometryNodeInputPosition", f"{tag} Pos").outputs[0],
               prox.inputs["Source Position" if "Source Position" in prox.inputs else "Sample Position"])
        return prox.outputs["Distance"]

    # first a coarse table (blocks of COARSE x COARSE cells, same test with the block's half diagonal): the
    # cells' search runs only in the blocks near a path (a store evaluates its value for its selection only)
    n_coarse = CELLS // COARSE
    coarse = b.node("GeometryNodePoints", "Block Table")
    coarse.inputs["Count"].default_value = n_coarse * n_coarse
    b.link(centres(n_coarse, b.math("MULTIPLY", cell, float(COARSE), label="Block Size"), "Block")[0],
           coarse.inputs["Position"])
    half_block = b.math("MULTIPLY", b.math("MULTIPLY_ADD", b.math("MULTIPLY", cell, float(COARSE)), xy_reach, z_half),
                        0.5001, label="Half Block")
    block_geo = b.store(coarse.outputs[0], "near", b.math("LESS_THAN", path_distance("Block"),
                                                          b.math("ADD", reach, half_block), label="Near Block"),
                        data_type="BOOLEAN", label="Store Near Block")
    block_of_cell = b.math("MULTIPLY_ADD", b.math("FLOOR", b.math("DIVIDE", cy, float(COARSE))), float(n_coarse),
                           b.math("FLOOR", b.math("DIVIDE", cx, float(COARSE))), label="Block Of Cell")
    in_near_block = b.sample_index(block_geo, b.named("near", "BOOLEAN", label="Read Near Block").outputs["Attribute"],
                                   block_of_cell, "BOOLEAN", label="In Near Block")
    near_cell = b.math("LESS_THAN", path_distance("Path"), reach_max, label="Near Cell")
    # booleans end to end: a float read as a selection would be converted vertex by vertex
    table_geo = b.store(table.outputs[0], "near", near_cell, data_type="BOOLEAN", label="Store Near Cell",
                        selection=in_near_block)
    # the path nearest to a near cell's centre; a path is "apart" when every other path is farther than twice
    # the reach plus the cell's half diagonal from it: then that path is the nearest one for every point of the
    # cell that any path can stamp, and those points need no nearest-path search of their own
    cell_nearest = b.node("GeometryNodeSampleNearest", "Cell Nearest Path", domain="EDGE")
    b.link(paths, cell_nearest.inputs["Geometry"])
    b.link(b.node("GeometryNodeInputPosition", "Cell Centre Pos").outputs[0], cell_nearest.inputs["Sample Position"])
    table_geo = b.store(table_geo, "edge", cell_nearest.outputs["Index"], data_type="INT", label="Store Cell Edge",
                        selection=b.named("near", "BOOLEAN", label="Read Near For Edge").outputs["Attribute"])
    before_pos = b.sample_index(actors_before, pos_in, index, "FLOAT_VECTOR", label="Before Here")
    half_len = b.math("MULTIPLY", b.vmath("LENGTH", b.flat(b.vmath("SUBTRACT", pos_in, before_pos), "Step")), 0.5,
                      label="Half Step")
    mids = b.store(actors_now, "half", half_len, label="Store Half Step")
    mids_set = b.node("GeometryNodeSetPosition", "Path Middles")
    b.link(mids, mids_set.inputs["Geometry"])
    b.link(b.flat(b.vmath("SCALE", b.vmath("ADD", pos_in, before_pos), scale=0.5), "Middle"),
           mids_set.inputs["Position"])
    mids = mids_set.outputs[0]
    other = b.node("GeometryNodeIndexOfNearest", "Nearest Other Path")
    b.link(pos_in, other.inputs["Position"])
    half_r = b.named("half", label="Read Half Step").outputs["Attribute"]
    max_half = b.node("GeometryNodeAttributeStatistic", "Longest Half Step", data_type="FLOAT", domain="POINT")
    b.link(mids, max_half.inputs["Geometry"])
    b.link(half_r, max_half.inputs["Attribute"])
    gap = b.math("SUBTRACT", b.math("SUBTRACT", b.vmath("DISTANCE", pos_in, b.sample_index(
        mids, pos_in, other.outputs["Index"], "FLOAT_VECTOR", label="Other Middle")), half_r), max_half.outputs["Max"],
        label="Path Gap")
    n_actors = size.outputs["Point Count"]
    apart = b.boolean("OR", b.math("LESS_THAN", n_actors, 1.5, label="One Actor"),
                      b.math("GREATER_THAN", gap, b.math("MULTIPLY", reach_max, 2.0), label="Far Apart"),
                      label="Apart")
    mids = b.store(mids, "apart", apart, data_type="BOOLEAN", label="Store Apart")
    # per near cell: whether its nearest path is apart (the state points then read one flag of their cell)
    table_geo = b.store(table_geo, "apart", b.sample_index(
        mids, b.named("apart", "BOOLEAN", label="Read Apart").outputs["Attribute"],
        b.named("edge", "INT", label="Read Cell Edge").outputs["Attribute"], "BOOLEAN", label="Cell Path Apart"),
        data_type="BOOLEAN", label="Store Cell Apart",
        selection=b.named("near", "BOOLEAN", label="Read Near For Apart").outputs["Attribute"])
    # one code per cell for the state points' single gather: near ? 2 x edge + apart : -1
    near_f = b.named("near", "BOOLEAN", label="Read Near For Code").outputs["Attribute"]
    table_geo = b.store(table_geo, "code", b.math("SUBTRACT", b.math("MULTIPLY", near_f, b.math(
        "ADD", b.math("MULTIPLY_ADD", b.named("edge", "INT", label="Read Edge For Code").outputs["Attribute"], 2.0,
                      b.named("apart", "BOOLEAN", label="Read Apart For Code").outputs["Attribute"]), 1.0)), 1.0,
        label="Cell Code"), data_type="INT", label="Store Cell Code")
    if occluders:  # the cells an occluder's footprint may cover
        occ_prox = b.node("GeometryNodeProximity", "Occluder Proximity", target_element="FACES")
        b.link(occ_flat.outputs[0], occ_prox.inputs[0])
        b.link(b.node("GeometryNodeInputPosition", "Cell Pos 2").outputs[0],
               occ_prox.inputs["Source Position" if "Source Position" in occ_prox.inputs else "Sample Position"])
        occ_cell = b.math("LESS_THAN", occ_prox.outputs["Distance"], b.math("ADD", half_cell, 1e-6),
                          label="Occ Cell")
        table_geo = b.store(table_geo, "occ", occ_cell, data_type="BOOLEAN", label="Store Occ Cell")
    s.put(table_geo=table_geo)


def _grow_state(b, s, occluders):
    """The trail state cloud, grown by a block of points for each cell reached for the first time."""
    sim_in, index, table_geo = s.get("sim_in index table_geo")
    # --- trail state, kept off the 1M-vertex mesh: only the vertices of the "held" cells (cells a path or an
    # occluder has reached) carry a state, stored cell by cell in one small point cloud "State" (STATE per
    # point); the table "Held" gives each cell the start of its block in it plus one (0 = no state). A vertex's
    # state is at block start + its rank among its cell's vertices (snow_slot, computed once). The mesh itself
    # passes the zone unchanged, so no 1M-vertex attribute is copied into the simulation's cache.
    held_prev = sim_in.outputs["Held"]
    state_prev = sim_in.outputs["State"]
    sorted_pts = sim_in.outputs["Sorted"]
    cells_static = sim_in.outputs["Cells"]

    count = _ival(b, cells_static, "count", index, "Cell Count")
    start = _ival(b, cells_static, "start", index, "Cell Start")
    d1_old = _ival(b, held_prev, "d1", index, "Old Block")
    # the flags stored above are read back (a field used by two stores would be evaluated twice: the proximity
    # search is the table's main cost)
    cand_cell = b.named("near", "BOOLEAN", label="Read Near Cell").outputs["Attribute"]
    if occluders:
        cand_cell = b.boolean("OR", cand_cell, b.named("occ", "BOOLEAN", label="Read Occ Cell").outputs["Attribute"],
                              label="Candidate Cell")
    # the state grows by whole cells: a cell a path (or an occluder) reaches for the first time gets a block
    # appended to the state cloud; the blocks of the cells held before stay where they are (so the per-frame work
    # is the stamp near this frame's paths, not a rebuild of every cell ever held)
    new_cell = b.boolean("AND", b.boolean("AND", cand_cell, b.math("GREATER_THAN", count, 0.0, label="Has Vertices")),
                         b.math("LESS_THAN", d1_old, 0.5, label="Not Held"), label="New Cell")
    table_geo = b.store(table_geo, "new", new_cell, data_type="BOOLEAN", label="Store New")
    table_geo = b.store(table_geo, "start", start, data_type="INT", label="Store Start")
    table_geo = b.store(table_geo, "count", count, data_type="INT", label="Store Count")
    table_geo = b.store(table_geo, "cell", index, data_type="INT", label="Store Cell Index")
    new_r = b.named("new", "BOOLEAN", label="Read New").outputs["Attribute"]
    new_count = b.math("MULTIPLY", new_r, b.named("count", "INT", label="Read Count").outputs["Attribute"],
                       label="New Count")
    acc = b.node("GeometryNodeAccumulateField", "Block Starts", data_type="INT", domain="POINT")
    b.link(new_count, acc.inputs[0])
    old_size = b.node("GeometryNodeAttributeDomainSize", "Old State Size", component="POINTCLOUD")
    b.link(state_prev, old_size.inputs[0])
    old_total = old_size.outputs["Point Count"]
    # d1 = block start + 1 in the state cloud (0 = no state); new blocks start after the old cloud
    new_d1 = b.math("ADD", b.math("SUBTRACT", acc.outputs["Leading"], new_count), b.math("ADD", old_total, 1.0),
                    label="New Block Start")
    d1_new = b.math("ADD", d1_old, b.math("MULTIPLY", new_r, new_d1), label="Block")
    table_geo = b.store(table_geo, "d1", d1_new, data_type="INT", label="Store Block")
    dup = b.node("GeometryNodeDuplicateElements", "New Vertices", domain="POINT")
    b.link(table_geo, dup.inputs["Geometry"])
    b.link(new_r, dup.inputs["Selection"])
    b.link(b.named("count", "INT", label="Read Dup Count").outputs["Attribute"], dup.inputs["Amount"])
    # a new point's rank in its cell is its duplicate index: its vertex is the sorted point start + rank
    new_geo = b.store(dup.outputs["Geometry"], "sidx",
                      b.math("ADD", b.named("start", "INT", label="Read Dup Start").outputs["Attribute"],
                             dup.outputs["Duplicate Index"]), data_type="INT", label="Store Sorted Index")
    for name in ("near", "edge", "apart", "code", "occ", "new", "start", "count", "d1", "radius"):
        if name == "occ" and not occluders:
            continue
        drop = b.node("GeometryNodeRemoveAttribute", f"Drop New {name}")
        b.link(new_geo, drop.inputs["Geometry"])
        drop.inputs["Name"].default_value = name
        new_geo = drop.outputs["Geometry"]
    # (linked: an unlinked Position input is the points' own position, an implicit field)
    new_geo = b.set_state(new_geo, b.vector("Zero State", (0.0, 0.0, 0.0)), None, "New Zero State")
    # the old cloud (points: the state as position, sidx = sorted vertex index, cell) with the new blocks (zero
    # state) after it
    grown = b.node("GeometryNodeJoinGeometry", "State Grown")
    b.link(new_geo, grown.inputs[0])
    b.link(state_prev, grown.inputs[0])  # join order: the last link comes first
    geo = grown.outputs[0]
    sidx = b.named("sidx", "INT", label="Read Point Sorted").outputs["Attribute"]
    point_cell = b.named("cell", "INT", label="Read Point Cell").outputs["Attribute"]
    s.put(cells_static=cells_static, geo=geo, point_cell=point_cell, sidx=sidx, sorted_pts=sorted_pts,
          table_geo=table_geo)


def _stamp_state(b, s, occluders):
    """The state points near a path stamped, the others refilled, the occluders' hold, and the "Held" table of
    each cell's block."""
    (sorted_pts, sidx, to_world, geo, thick_node, table_geo, point_cell, nearest, new_down, new_rim, kd, keep,
     old_down, old_rim, values, occ_flat, P, index, snow_geo, sim_out, actors_now) = s.get(
        "sorted_pts sidx to_world geo thick_node table_geo point_cell nearest new_down new_rim kd keep "
        "old_down old_rim values occ_flat P index snow_geo sim_out actors_now")
    # P (the vertex's world position) is gathered where it is needed (the stamp of the points near a path, the
    # occluders)
    b.link(b.sample_index(sorted_pts, b.node("GeometryNodeInputPosition", "Sorted Pos").outputs[0], sidx,
                          "FLOAT_VECTOR", label="Vertex Position"), to_world.inputs["Vector"])
    if occluders:  # the occluders hold the snow down to its thickness
        geo = b.store(geo, "snow_thickness",
                      b.sample_index(sorted_pts, thick_node.outputs["Attribute"], sidx, label="Vertex Thickness"),
                      label="Store Held Thickness")
    # whether a point's cell is near a path: gathered once and stored (read by three selections below)
    # per point one gather of its cell's code (near: 2 x the cell's path + whether that path is apart; -1: not
    # near), stored: the selections below and the puffs read it, each with a compare (no gather of their own)
    geo = b.store(geo, "pcode", b.sample_index(
        table_geo, b.named("code", "INT", label="Read Table Code").outputs["Attribute"], point_cell, "INT",
        label="Point Code"), data_type="INT", label="Store Point Code")
    pcode = b.named("pcode", "INT", label="Read Point Code").outputs["Attribute"]
    near_pt = b.compare("GREATER_EQUAL", pcode, 0, label="Point Near")
    cell_edge = b.math("FLOOR", b.math("MULTIPLY", pcode, 0.5), label="Point Cell Edge")
    apart_pt = b.math("FLOORED_MODULO", pcode, 2.0, label="Point Path Apart")
    # every near point takes its cell's path; where that path is not apart from the others, its own nearest
    geo = b.store(geo, "edge", cell_edge, data_type="INT", label="Store Point Edge", selection=near_pt)
    geo = b.store(geo, "edge", nearest.outputs["Index"], data_type="INT", label="Store Point Nearest Edge",
                  selection=b.boolean("AND", near_pt, b.compare("LESS_THAN", apart_pt, 0.5, data_type="FLOAT",
                                                                label="Path Not Apart"), label="Near Others"))
    # trails near the paths (down and rim stored together, both from the old state);
    # far from every path only the refill applies (the stamp is 0 there)
    stamped = b.set_state(geo, b.combine_xyz(new_down, new_rim, b.math("SUBTRACT", new_down, kd, label="Pushed Now"),
                                             label="New State"), near_pt, "Store New State")
    decayed = b.set_state(stamped, b.combine_xyz(b.math("MULTIPLY", keep, old_down, label="Far Down"),
                                                 b.math("MULTIPLY", keep, old_rim, label="Far Rim"), 0.0),
                          b.boolean("NOT", near_pt, label="Far"), "Store Far State")
    refill_on = b.math("GREATER_THAN", values["Refill Rate"], 0.0, label="Refill On")
    geo = b.switch("Refilling", refill_on, decayed, stamped, "GEOMETRY")  # lazy: no refill, no work
    if occluders:
        occ_pt = b.sample_index(table_geo, b.named("occ", "BOOLEAN", label="Read Table Occ").outputs["Attribute"],
                                point_cell, "BOOLEAN", label="Point Occ")
        occ_any = b.node("GeometryNodeAttributeStatistic", "Any Occ Cell", data_type="FLOAT", domain="POINT")
        b.link(table_geo, occ_any.inputs["Geometry"])
        b.link(b.named("occ", "FLOAT", label="Read Occ Flag").outputs["Attribute"], occ_any.inputs["Attribute"])
        occluding = b.switch("Occluding", b.math("GREATER_THAN", occ_any.outputs["Max"], 0.5),
                             _occluder_stores(b, geo, occ_flat, P, thick_node, occ_pt), geo, "GEOMETRY")
        drop = b.node("GeometryNodeRemoveAttribute", "Drop snow_thickness")
        b.link(occluding, drop.inputs["Geometry"])
        drop.inputs["Name"].default_value = "snow_thickness"
        geo = drop.outputs["Geometry"]
    # the block table: d1 per cell (the cache keeps it and the state cloud only)
    held_out = b.node("GeometryNodePoints", "Held Table")
    held_out.inputs["Count"].default_value = CELLS * CELLS
    held_geo = b.store(held_out.outputs[0], "d1", _ival(b, table_geo, "d1", index, "Block"), data_type="INT",
                       label="Store Held Table")
    b.link(snow_geo, sim_out.inputs["Geometry"])
    b.link(actors_now, sim_out.inputs["Actors"])
    s.put(geo=geo, held_geo=held_geo, near_pt=near_pt)


def _puffs_and_display(b, s):
    """The puffs, and the shown snow: each held vertex moved by its trail, with the camera fade laying the snow
    flat far from the camera."""
    (values, P, sorted_pts, sidx, thick_node, geo, near_pt, sim_in, dt, sim_out, held_geo, cells_static, matrix,
     group_out) = s.get(
        "values P sorted_pts sidx thick_node geo near_pt sim_in dt sim_out held_geo cells_static matrix "
        "group_out")
    puffs_on = b.compare("GREATER_THAN", values["Puffs"], 0.5, data_type="FLOAT", label="Puffs Wanted")
    # the active camera (world location; none: Object Info gives scale 0, and the snow is shown as near it)
    cam_info, has_cam, span, fade_offset = _camera_fade(b, values)

    def flat_share(dist, per_metre, label):
        """1 - core.snow.camera_fade: how far the snow is laid flat at ``dist`` (``per_metre``: 1 / the fade's span
        in ``dist``'s units, one value per object), in one per-vertex operation: clamp(dist/span - start/span)."""
        return b.math("MULTIPLY_ADD", dist, per_metre, b.math("MULTIPLY", fade_offset, -1.0), label=label,
                      use_clamp=True)

    # a puff starts at the shown snow top: lowered with the snow where the camera fade lays it flat
    puff_flat_share = b.switch("Puff Camera Fade", has_cam, flat_share(
        b.vmath("DISTANCE", P, cam_info.outputs["Location"]), b.math("DIVIDE", 1.0, span, label="Per Metre"),
        "Puff Flat Share"), 0.0)
    puff_flat = b.math("MULTIPLY", b.sample_index(sorted_pts, thick_node.outputs["Attribute"], sidx,
                                                  label="Puff Vertex Thickness"), -GROUND_KEEP, label="Puff Flat")
    puff_start = b.vmath("ADD", P, b.combine_xyz(0.0, 0.0, b.math("MULTIPLY", puff_flat_share, puff_flat),
                                                 label="Puff Lowered"), label="Puff Start")
    b.link(puffs_step(b, geo, near_pt, puff_start, sim_in, dt, values, puffs_on), sim_out.inputs["Puffs"])
    for name in ("edge", "pcode"):  # per frame only: not kept in the cache
        drop = b.node("GeometryNodeRemoveAttribute", f"Drop {name}")
        b.link(geo, drop.inputs["Geometry"])
        drop.inputs["Name"].default_value = name
        geo = drop.outputs["Geometry"]
    b.link(geo, sim_out.inputs["State"])
    b.link(held_geo, sim_out.inputs["Held"])
    b.link(sorted_pts, sim_out.inputs["Sorted"])
    b.link(cells_static, sim_out.inputs["Cells"])

    # --- display: each vertex of a held cell reads its state at block start + rank (two gathers, no search);
    # its trail moves it along world Z by max(rim - down, -GROUND_KEEP * its snow thickness). With the camera
    # fade (the write-up: "The vertex offset fades out with the distance from the camera, lowering the snow flat
    # with the ground surface further away"; core.snow.shown_offset) every vertex moves by
    # fade * trail + (1 - fade) * (-GROUND_KEEP * thickness): the trail near the camera, the snow flat on the
    # ground beyond Camera Fade End. Snow wholly within Camera Fade Start of the camera (or a scene without an
    # active camera) has nothing to lay flat: then only the held vertices move, by their trail (a per-object
    # switch, so the near case costs what the trails alone cost). Everything is computed per vertex from its own
    # rest position and thickness (no pass over the state points, no store; the state is gathered for the held
    # vertices only)
    state = sim_out.outputs["State"]
    cell_v = b.named("snow_cell", "INT", label="Read Display Cell").outputs["Attribute"]
    d1_v = _ival(b, sim_out.outputs["Held"], "d1", cell_v, "Vertex Block")
    # held: a block start in the table (one gather a vertex, the selection is its compare)
    moved = b.compare("GREATER_THAN", d1_v, 0, label="Moved")
    at = b.math("ADD", b.math("SUBTRACT", d1_v, 1.0),
                b.named("snow_slot", "INT", label="Read Slot").outputs["Attribute"], label="State Index")
    vertex_state = b.node("ShaderNodeSeparateXYZ", "Vertex State")
    b.link(b.sample_index(state, b.node("GeometryNodeInputPosition", "Read Out State").outputs[0], at, "FLOAT_VECTOR",
                          label="Gather State"), vertex_state.inputs[0])
    # a mesh without snow_thickness (trails on any mesh) is never clamped to a ground, nor laid flat
    thick_v = b.named("snow_thickness", label="Read Vertex Thickness")
    vertex_thickness = b.math("MULTIPLY_ADD", b.math("SUBTRACT", 1.0, thick_v.outputs["Exists"]), 1.0e6,
                              thick_v.outputs["Attribute"], label="Vertex Thickness")
    disp = b.math("MAXIMUM", b.math("SUBTRACT", vertex_state.outputs["Y"], vertex_state.outputs["X"]),
                  b.math("MULTIPLY", vertex_thickness, -GROUND_KEEP), label="Displacement")
    flat = b.math("MULTIPLY", thick_v.outputs["Attribute"], -GROUND_KEEP, label="Flat On Ground")
    cam_local, unit = _camera_local(b, matrix, cam_info)  # (in object space)
    # the object's scale and the fade's span folded into one factor per object (a vertex pays a distance and
    # one multiply-add for its share laid flat, g = 1 - fade)
    per_unit = b.math("DIVIDE", unit, span, label="Per Object Unit")
    flat_g = flat_share(b.vmath("DISTANCE", b.node("GeometryNodeInputPosition", "Display Pos").outputs[0],
                                cam_local.outputs[0], label="Camera Distance"), per_unit, "Laid Flat")
    # fade * trail + (1 - fade) * flat = trail + g * (flat - trail): the held vertices (the only ones whose
    # trail is not 0) and the others (g * flat) apart, so the state is gathered for the held vertices only
    shown = b.math("MULTIPLY_ADD", flat_g, b.math("SUBTRACT", flat, disp), disp, label="Shown")
    shown_rest = b.math("MULTIPLY", flat_g, thick_v.outputs["Attribute"], label="Shown Untouched")
    # per object: the farthest corner of the snow's bounds (object space, kept on "Cells") from the camera
    def bound(name):
        return b.sample_index(sim_out.outputs["Cells"], b.named(name, "FLOAT_VECTOR", label=f"Read Shown {name}")
                              .outputs["Attribute"], 0, "FLOAT_VECTOR", label=f"Shown {name}")

    corner = b.vmath("MAXIMUM", b.vmath("ABSOLUTE", b.vmath("SUBTRACT", cam_local.outputs[0], bound("bound_min"))),
                     b.vmath("ABSOLUTE", b.vmath("SUBTRACT", bound("bound_max"), cam_local.outputs[0])),
                     label="Farthest Corner")
    farthest = b.math("MULTIPLY", b.vmath("LENGTH", corner), unit, label="Farthest Distance")
    laying_flat = b.boolean("AND", has_cam, b.compare("GREATER_THAN", farthest, values["Camera Fade Start"],
                                                      data_type="FLOAT", label="Beyond Fade Start"),
                            label="Laying Flat")
    invert = b.node("FunctionNodeInvertMatrix", "Invert")
    b.link(matrix, invert.inputs[0])
    local_up = b.node("FunctionNodeTransformDirection", "Up Local")  # one value per object
    b.link(invert.outputs[0], local_up.inputs["Transform"])
    local_up.inputs["Direction"].default_value = (0.0, 0.0, 1.0)
    near_pos = b.node("GeometryNodeSetPosition", "Set Position", location=(2700, 0))
    b.link(sim_out.outputs["Geometry"], near_pos.inputs["Geometry"])
    b.link(moved, near_pos.inputs["Selection"])
    b.link(b.vmath("SCALE", local_up.outputs[0], scale=disp, label="Vertex Offset"), near_pos.inputs["Offset"])
    # laying flat: the held vertices first, then the others (their positions are still at rest, as the camera
    # distance wants)
    held_pos = b.node("GeometryNodeSetPosition", "Set Position Held Faded", location=(2700, -200))
    b.link(sim_out.outputs["Geometry"], held_pos.inputs["Geometry"])
    b.link(moved, held_pos.inputs["Selection"])
    b.link(b.vmath("SCALE", local_up.outputs[0], scale=shown, label="Faded Offset"), held_pos.inputs["Offset"])
    flat_pos = b.node("GeometryNodeSetPosition", "Set Position Faded", location=(2900, -200))
    b.link(held_pos.outputs[0], flat_pos.inputs["Geometry"])
    b.link(b.boolean("NOT", moved, label="Untouched"), flat_pos.inputs["Selection"])
    up_flat = b.vmath("SCALE", local_up.outputs[0], scale=-GROUND_KEEP, label="Up Flat")  # one value per object
    b.link(b.vmath("SCALE", up_flat, scale=shown_rest, label="Faded Untouched Offset"), flat_pos.inputs["Offset"])
    snow_shown = b.switch("Lay Flat", laying_flat, flat_pos.outputs[0], near_pos.outputs[0], "GEOMETRY")
    joined = b.node("GeometryNodeJoinGeometry", "Snow And Puffs")
    b.link(puffs_shown(b, sim_out.outputs["Puffs"], invert, values, puffs_on), joined.inputs[0])
    b.link(snow_shown, joined.inputs[0])  # join order: the last link comes first
    s.put(sim_shown=joined.outputs[0])


def _camera_fade(b, values):
    """The active camera's Object Info node, whether there is one (none: Object Info gives scale 0), and the camera
    fade's span (End - Start, at least 1e-6) and offset (Start / span): (info, has camera, span, offset)."""
    cam = b.node("GeometryNodeInputActiveCamera", "Camera")
    cam_info = b.node("GeometryNodeObjectInfo", "Camera Info", transform_space="ORIGINAL")
    b.link(cam.outputs[0], cam_info.inputs["Object"])
    has_cam = b.compare("GREATER_THAN", b.vmath("LENGTH", cam_info.outputs["Scale"]), 0.0, data_type="FLOAT",
                        label="Has Camera")
    span = b.math("MAXIMUM", b.math("SUBTRACT", values["Camera Fade End"], values["Camera Fade Start"]), 1e-6,
                  label="Camera Fade Span")
    return cam_info, has_cam, span, b.math("DIVIDE", values["Camera Fade Start"], span, label="Camera Fade Offset")

def _camera_local(b, matrix, cam_info):
    """The active camera's location in the snow object's space (moved there once per object, not every vertex to
    world space: exact for uniform scale, an approximation for non-uniform scale) and the object's scale along its
    X axis: (the Transform Point node, the scale's socket)."""
    cam_inv = b.node("FunctionNodeInvertMatrix", "Invert For Camera")
    b.link(matrix, cam_inv.inputs[0])
    cam_local = b.node("FunctionNodeTransformPoint", "Camera Local")
    b.link(cam_info.outputs["Location"], cam_local.inputs["Vector"])
    b.link(cam_inv.outputs[0], cam_local.inputs["Transform"])
    scale_x = b.node("FunctionNodeTransformDirection", "Scale X")
    b.link(matrix, scale_x.inputs["Transform"])
    scale_x.inputs["Direction"].default_value = (1.0, 0.0, 0.0)
    return cam_local, b.vmath("LENGTH", scale_x.outputs[0], label="Object Scale")

def _numpy_display(b, s):
    """The Numpy trails engine's display, the whole group when the scene's Trails Engine is Numpy
    (``operators.snow.numpy_trails``): the trail state is held in numpy by a frame handler, which writes each
    vertex's shown trail (``max(rim - down, -GROUND_KEEP x thickness)``, 0 where no path reached) into the mesh
    attribute ``snow_trail``; here each vertex moves by it along world Z, with the camera fade of the simulation's
    display (the same formula: ``trail + g x (flat - trail)``, g = 1 - fade). Nothing here follows the frame (no
    simulation zone, no scene time; the actors are read by the handler, so the modifier's actor inputs are not
    driven): a frame change evaluates the snow once, after the handler wrote the attribute (unless the camera
    moves: the fade reads it)."""
    values, group_out, matrix = s.get("values group_out matrix")
    geometry = s.group_in.outputs["Geometry"]
    # the active camera (world location; none: Object Info gives scale 0, and nothing is laid flat)
    cam_info, has_cam, span, fade_offset = _camera_fade(b, values)
    cam_local, unit = _camera_local(b, matrix, cam_info)  # (in object space, as the simulation's display)
    invert = b.node("FunctionNodeInvertMatrix", "Invert")
    b.link(matrix, invert.inputs[0])
    local_up = b.node("FunctionNodeTransformDirection", "Up Local")  # one value per object
    b.link(invert.outputs[0], local_up.inputs["Transform"])
    local_up.inputs["Direction"].default_value = (0.0, 0.0, 1.0)

    trail = b.named(TRAIL_ATTRIBUTE, label="Read Numpy Trail").outputs["Attribute"]
    thick = b.named("snow_thickness", label="Read Numpy Thickness").outputs["Attribute"]
    flat = b.math("MULTIPLY", thick, -GROUND_KEEP, label="Numpy Flat On Ground")
    pos = b.node("GeometryNodeInputPosition", "Numpy Display Pos").outputs[0]
    per_unit = b.math("DIVIDE", unit, span, label="Numpy Per Object Unit")
    g = b.math("MULTIPLY_ADD", b.vmath("DISTANCE", pos, cam_local.outputs[0], label="Numpy Camera Distance"),
               per_unit, b.math("MULTIPLY", fade_offset, -1.0), label="Numpy Laid Flat", use_clamp=True)
    shown = b.math("MULTIPLY_ADD", g, b.math("SUBTRACT", flat, trail), trail, label="Numpy Shown")
    # per object: the farthest corner of the snow's bounds from the camera (within Camera Fade Start, or no
    # camera: nothing is laid flat, the trail alone moves the vertices, one read and one set a vertex)
    box = b.node("GeometryNodeBoundBox", "Numpy Bounds")
    b.link(geometry, box.inputs[0])
    corner = b.vmath("MAXIMUM", b.vmath("ABSOLUTE", b.vmath("SUBTRACT", cam_local.outputs[0], box.outputs["Min"])),
                     b.vmath("ABSOLUTE", b.vmath("SUBTRACT", box.outputs["Max"], cam_local.outputs[0])),
                     label="Numpy Farthest Corner")
    farthest = b.math("MULTIPLY", b.vmath("LENGTH", corner), unit, label="Numpy Farthest Distance")
    laying_flat = b.boolean("AND", has_cam, b.compare("GREATER_THAN", farthest, values["Camera Fade Start"],
                                                      data_type="FLOAT", label="Numpy Beyond Fade Start"),
                            label="Numpy Laying Flat")
    near = b.node("GeometryNodeSetPosition", "Numpy Set Position")
    b.link(geometry, near.inputs["Geometry"])
    b.link(b.vmath("SCALE", local_up.outputs[0], scale=trail, label="Numpy Offset"), near.inputs["Offset"])
    faded = b.node("GeometryNodeSetPosition", "Numpy Set Position Faded")
    b.link(geometry, faded.inputs["Geometry"])
    b.link(b.vmath("SCALE", local_up.outputs[0], scale=shown, label="Numpy Faded Offset"), faded.inputs["Offset"])
    b.link(b.switch("Numpy Lay Flat", laying_flat, faded.outputs[0], near.outputs[0], "GEOMETRY"),
           group_out.inputs[0])


def _occluder_stores(b, geo, occ_flat, P, thick_node, occ_here):
    ray = b.node("GeometryNodeRaycast", "Occluded")
    b.link(occ_flat.outputs[0], ray.inputs["Target Geometry"])
    b.link(b.vmath("ADD", b.flat(P, "Ray"), b.vector("Up", (0.0, 0.0, 1.0))), ray.inputs["Source Position"])
    ray.inputs["Ray Direction"].default_value = (0.0, 0.0, -1.0)
    ray.inputs["Ray Length"].default_value = 2.0
    occ = ray.outputs["Is Hit"]
    cur = b.node("ShaderNodeSeparateXYZ", "State After Trails")
    b.link(b.node("GeometryNodeInputPosition", "Read State After Trails").outputs[0], cur.inputs[0])
    cur_down, cur_rim = cur.outputs["X"], cur.outputs["Y"]
    occ_thick = b.math("MULTIPLY", occ, thick_node.outputs["Attribute"], label="Occ Depth")
    geo = b.set_state(geo, b.combine_xyz(b.math("MAXIMUM", cur_down, occ_thick, label="Down Occ"),
                                         b.math("MULTIPLY", cur_rim, b.math("SUBTRACT", 1.0, occ), label="Rim Occ"),
                                         cur.outputs["Z"]), occ_here, "Store Occ State")
    return geo
