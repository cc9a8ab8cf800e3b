"""What the object operators of every feature share: the result of acting on objects, and reporting it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ObjectsResult:
    """What an operation did to a list of objects (by name: names survive undo)."""

    changed: list = field(default_factory=list)
    unchanged: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)  # name -> reason
    warnings: list = field(default_factory=list)

    def skipped_text(self) -> str:
        return "; ".join(f"{name} ({why})" for name, why in self.skipped.items())

    def summary(self, verb: str) -> str:
        text = f"{verb} {len(self.changed)} object(s)"
        if self.unchanged:
            text += f", {len(self.unchanged)} unchanged"
        return text


def report_result(op, result: ObjectsResult, verb: str, details: str = ""):
    """Warnings and skipped objects as WARNING reports, then one INFO line."""
    for warning in result.warnings:
        op.report({"WARNING"}, warning)
    if result.skipped:
        op.report({"WARNING"}, f"Skipped: {result.skipped_text()}")
    op.report({"INFO"}, result.summary(verb) + details)


class NeedsScene:
    """Operator mixin: greyed out, with the reason, when there is no scene to work on."""

    @classmethod
    def poll(cls, context):
        if context.scene is None or not hasattr(context.scene, "envfx"):
            cls.poll_message_set("Needs a scene")
            return False
        return True
