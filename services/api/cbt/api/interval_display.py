"""How positions are shown: the config's ``interval_types`` (``cbt.config.interval_types``) for every interval type
the models use, as the API serves it to the web UI and to clients. Pure: values in, bodies out."""

from __future__ import annotations

from collections.abc import Iterable

from cbt.api.schemas import IntervalTypeItem, IntervalTypeList, ShownItem, ShownPosition, TransformationItem
from cbt.config.interval_types import IntervalTypes, Transformation, transformations_for
from cbt.config.position_expr import ExpressionError
from cbt.models.spec import is_time_type


def item(t: Transformation) -> TransformationItem:
    return TransformationItem(name=t.name, expression=t.expression, format=t.format, label=t.label, program=t.program)


def interval_type_list(used: Iterable[str], configured: IntervalTypes) -> IntervalTypeList:
    """Every interval type the models use and every configured one, each with how its positions are shown."""
    kinds = sorted({*used, *configured})
    return IntervalTypeList(
        interval_types={
            kind: IntervalTypeItem(
                is_time=is_time_type(kind),
                configured=kind in configured,
                transformations=[item(t) for t in transformations_for(kind, configured, is_time_type(kind))],
            )
            for kind in kinds
        }
    )


def shown(interval_type: str, position: int, configured: IntervalTypes, now_ms: int) -> ShownPosition:
    """``position`` shown by each transformation of ``interval_type``; one that cannot compute it says why."""
    out = []
    for t in transformations_for(interval_type, configured, is_time_type(interval_type)):
        try:
            out.append(ShownItem(name=t.name, text=t.show(position, now_ms)))
        except ExpressionError as e:
            out.append(ShownItem(name=t.name, text=None, error=str(e)))
    return ShownPosition(interval_type=interval_type, position=position, shown=out)
