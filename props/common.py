"""Helpers shared by the settings of several features: the library-override flag and the check that puts back
unusable numbers (NaN, inf, enormous) set on a setting."""

from __future__ import annotations

from typing import TYPE_CHECKING

import bpy

from ..operators.common import restore_good_numbers

if TYPE_CHECKING:  # the stubs' names for the flags' literals (no such module at run time)
    from bpy.stub_internal.rna_enums import PropertyOverrideFlagItems

# Per-object settings can be changed on a library override (an asset linked into a level) and are saved with it.
OVERRIDABLE: set[PropertyOverrideFlagItems] = {"LIBRARY_OVERRIDABLE"}


def _report(context, text: str):
    """Tell the user about a refused value from an update callback (no operator to report through): the console,
    and a pop-up where there is a window."""
    print(text)
    if context is not None and getattr(context, "window", None) is not None and not bpy.app.background:
        context.window_manager.popup_menu(lambda menu, _ctx: menu.layout.label(text=text), title="EnvFX",
                                          icon="ERROR")


def _numbers_checked(update):
    """``update`` run only when every float setting of the group is usable: NaN, inf and enormous numbers (which
    make every vertex of a live effect NaN) are put back to the last good value and reported instead."""
    def checked(self, context):
        refused = restore_good_numbers(self)  # (its restore runs this callback again, with good values)
        if refused:
            _report(context, refused)
            return
        update(self, context)
    checked.__doc__ = update.__doc__
    return checked
