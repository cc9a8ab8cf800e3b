"""Rigid sway's drivers (core.wind.rigid): the staged expressions, evaluated as Blender's simple expressions do
(a Python subset: the functions below and nothing else), give the numpy twin's delta rotation, fit in what
Blender keeps of an expression, and close the loop."""

import ast
import math

import numpy as np
import pytest

from core import wind
from core.wind import rigid

# what Blender's simple expressions offer that these use
FUNCTIONS = {"sin": math.sin, "cos": math.cos, "atan": math.atan, "sqrt": math.sqrt, "floor": math.floor,
             "max": max}


def _eval(expression, names):
    tree = ast.parse(expression, mode="eval")
    for node in ast.walk(tree):  # only calls of those functions, names, numbers, arithmetic, comparisons, if-else
        assert not isinstance(node, (ast.Attribute, ast.Subscript, ast.Lambda, ast.Pow)), ast.dump(node)
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
        if isinstance(node, ast.Name) and node.id not in FUNCTIONS:
            assert node.id in names, (node.id, expression)
    return eval(compile(tree, "<expr>", "eval"), {"__builtins__": {}}, {**FUNCTIONS, **names})


def _scene_vars(scene_wind, angle, fps, fps_base):
    return {"a": angle, "f": scene_wind.gust_frequency, "L": scene_wind.loop_frames, "fps": fps, "fpsb": fps_base,
            "s": scene_wind.strength, "g": scene_wind.gust_strength}


def _source_vars(euler, field_strength, scene_wind, fps, fps_base):
    rx, ry, rz = euler
    return {"rx": rx, "ry": ry, "rz": rz, "f": scene_wind.gust_frequency, "L": scene_wind.loop_frames, "fps": fps,
            "fpsb": fps_base, "s": field_strength, "g": scene_wind.gust_strength}


def _turn(x, y, z):
    """The rotation matrix of Euler XYZ angles."""
    cx, sx, cy, sy, cz, sz = math.cos(x), math.sin(x), math.cos(y), math.sin(y), math.cos(z), math.sin(z)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _drivers(frame, variables, asset, prop, source=False):
    """The delta rotation X, Y (and Z with a frame) the staged drivers compute at ``frame``."""
    time_vals = [_eval(e, {**variables, "frame": frame}) for e in rigid.time_expressions(source)]
    names = {rigid.time_variable_name(n): v for n, v in zip(rigid.TIME_NAMES, time_vals)}
    clock = [_eval(e, {**variables, **names}) for e in rigid.clock_expressions()]
    e = _eval(rigid.wind_expression(asset, prop),
              {k: clock[i] for k, i in rigid.wind_variables(asset.category).items()})
    rot = {k: clock[i] for k, i in rigid.rotation_variables(asset.category).items()}
    got = [_eval(rigid.rotation_expression(axis, asset, prop), {**rot, "e": e}) for axis in (0, 1)]
    if prop.frame is not None:
        got = [_eval(rigid.frame_expression(axis, prop), {"sx": got[0], "sy": got[1]}) for axis in (0, 1, 2)]
    return got, clock


ASSETS = [
    wind.AssetWind(category="TREE"),
    wind.AssetWind(category="PLANT", rigidity=1.5, bend=1.2, sway=1.0, ramp=1.0, main_bend=False),
    wind.AssetWind(category="GRASS", rigidity=0.01, bend=-10.0, sway=1e-5, ramp=100.0),
    wind.AssetWind(category="SPECIAL", rigidity=100.0, bend=10.0, sway=-10.0, ramp=0.0),
]


@pytest.mark.parametrize("asset", ASSETS, ids=[a.category for a in ASSETS])
@pytest.mark.parametrize("loop", [0, 96])
def test_staged_drivers_equal_the_twin(asset, loop):
    fps, fps_base = 30, 1.001
    angle = 2.4
    scene = wind.SceneWind(direction=(math.cos(angle), math.sin(angle), 0.0), strength=3.0, gust_strength=0.8,
                           gust_frequency=0.27, loop_frames=loop, fps=fps / fps_base)
    turned = _turn(0.3, 1.2, -0.8).T  # a parent turned about all three axes: the frame is its inverse
    for origin, base, frame_m in (((0.0, 0.0), (0.0, 0.0, 0.0), None), ((-812.25, 1.0e5 + 0.5), (0.3, -1.2, 0.7), None),
                                  ((40.0, -7.5), (0.1, 0.2, -0.3), tuple(turned.ravel()))):
        prop = rigid.RigidProp(origin=origin, base=base, frame=frame_m)
        for frame in (1, 7.5, 250, 4001):
            got, clock = _drivers(frame, _scene_vars(scene, angle, fps, fps_base), asset, prop)
            want = rigid.rigid_euler(frame, scene, asset, prop)
            assert got == pytest.approx(want[:len(got)], abs=2e-6), (frame, origin)
            assert clock == pytest.approx(rigid.clock_values(frame, scene).tolist(), rel=1e-6, abs=1e-9)


def test_the_wind_object_gives_direction_and_strength():
    euler = (0.4, 1.1, -2.0)  # a tilted field: its Z axis flattened is the wind's direction
    cx, sx, cy, sy, cz, sz = (f(a) for a in euler for f in (math.cos, math.sin))
    z_axis = (cz * sy * cx + sz * sx, sz * sy * cx - cz * sx, cy * cx)
    scene = wind.SceneWind(direction=z_axis, strength=4.0, gust_strength=0.5, gust_frequency=0.2, fps=24.0)
    asset = ASSETS[1]
    prop = rigid.RigidProp(origin=(3.0, -4.0))
    for frame in (2, 33):
        got, _ = _drivers(frame, _source_vars(euler, 4.0, scene, 24, 1.0), asset, prop, source=True)
        assert got == pytest.approx(rigid.rigid_euler(frame, scene, asset, prop)[:2], abs=2e-6)
    # a field pointing straight up blows nowhere: no sway (the base only), as the twin's zero direction
    up = wind.SceneWind(direction=(0.0, 0.0, 1.0), strength=4.0, gust_strength=0.5, fps=24.0)
    prop = rigid.RigidProp(origin=(3.0, -4.0), base=(0.25, -0.5, 0.125))
    got, _ = _drivers(5, _source_vars((0.0, 0.0, 0.7), 4.0, up, 24, 1.0), asset, prop, source=True)
    assert got == pytest.approx([0.25, -0.5], abs=1e-12)
    assert rigid.rigid_euler(5, up, asset, prop) == pytest.approx((0.25, -0.5, 0.125), abs=1e-12)


def test_expressions_fit_what_blender_keeps():
    longest = max(len(e) for source in (False, True) for e in rigid.time_expressions(source))
    longest = max(longest, *(len(e) for e in rigid.clock_expressions()))
    for asset in ASSETS:
        for origin in ((-1.0e6 - 0.123456, 1.0e6 + 0.654321), (1e-9, -1e-9)):
            prop = rigid.RigidProp(origin=origin, base=(-1234.5678, 9876.54321, -0.000123456789))
            framed = rigid.RigidProp(origin=origin, base=prop.base, frame=(-0.123456789e-7,) * 9)
            longest = max(longest, len(rigid.wind_expression(asset, prop)),
                          *(len(rigid.rotation_expression(a, asset, p)) for a in (0, 1) for p in (prop, framed)),
                          *(len(rigid.frame_expression(a, framed)) for a in (0, 1, 2)))
    assert longest <= rigid.MAX_EXPRESSION


def test_the_sway_loops_and_leans_with_the_wind():
    scene = wind.SceneWind(direction=(0.0, 1.0, 0.0), strength=2.0, gust_strength=0.5, loop_frames=48)
    asset = wind.AssetWind(category="PLANT", bend=0.0, sway=0.0)
    prop = rigid.RigidProp(origin=(5.0, 2.0))
    for frame in (1, 17.5, 40):
        assert rigid.rigid_euler(frame, scene, asset, prop) == pytest.approx(
            rigid.rigid_euler(frame + 48, scene, asset, prop), abs=1e-9)
    # wind towards +Y, no branch motion: the prop leans towards +Y only (a turn about -X), by the bent top's
    # chord: atan(effective wind x MAIN_SCALE)
    x, y, z = rigid.rigid_euler(10, scene, asset, prop)
    e = wind.effective_wind(wind.loop_time(10, scene), np.array([5.0, 2.0, 0.0]), scene, asset)
    assert y == pytest.approx(0.0, abs=1e-12) and z == 0.0
    assert x == pytest.approx(-math.atan(e * wind.MAIN_SCALE), rel=1e-12) and x < 0


def test_bad_axis_and_category_are_refused():
    with pytest.raises(ValueError, match="axis 0 or 1"):
        rigid.rotation_expression(2, ASSETS[0], rigid.RigidProp())
    with pytest.raises(ValueError, match="Unknown wind category"):
        rigid.wind_variables("BUSH")


def test_a_turned_parent_takes_the_world_sway_to_its_axes():
    """With the parent's rotation P and the frame M = P^-1, the prop's world delta turn P (M s) is the world sway s
    itself (as rotation vectors, to first order): the prop leans the way the wind blows whatever its parent."""
    scene = wind.SceneWind(direction=(0.6, 0.8, 0.0), strength=2.0)
    asset = wind.AssetWind(category="PLANT")
    parent = _turn(math.pi / 2, 0.0, 0.4)  # a Y-up file's root, turned
    prop = rigid.RigidProp(origin=(1.0, 2.0), frame=tuple(parent.T.ravel()))
    s = np.array([*rigid.world_sway(12, scene, asset, prop), 0.0])
    delta = np.array(rigid.rigid_euler(12, scene, asset, prop))
    assert np.abs(s).max() > 0.01
    assert parent @ delta == pytest.approx(s, abs=1e-12)
    with pytest.raises(ValueError, match="turned parent"):
        rigid.frame_expression(0, rigid.RigidProp())
