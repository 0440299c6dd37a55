"""Each bench target judged by code: met, missed or not measured — never left out, never softened in prose.

A bench declares its targets (``Target``) up front and, after its run, hands ``judge`` what it measured by key. A
target with nothing measured for it (the bench failed, a sample was empty, a model never ran) is "not measured",
which counts as missed. Figures without a target are reported with the verdict "no target", so the docs can quote
every figure from the same list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["met", "missed", "not measured", "no target"]
Comparison = Literal["<=", "<", "holds"]


@dataclass(frozen=True)
class Measured:
    """One measurement: the value (a number, or whether a property held) and the sample size behind it."""

    value: float | bool | None
    n: int | None = None
    note: str = ""


@dataclass(frozen=True)
class Target:
    """What a bench promises: ``key`` is the measurement's name in the bench's report, ``what`` its description."""

    key: str
    what: str
    limit: float | None = None
    unit: str = ""
    comparison: Comparison = "<="
    min_n: int = 1
    """Fewer samples than this is "not measured": a median of one task says nothing."""

    def describe(self) -> str:
        if self.comparison == "holds":
            return "holds"
        return f"{self.comparison} {_number(self.limit)}{self.unit}" if self.limit is not None else ""


def verdict(target: Target, measured: Measured | None) -> Verdict:
    if measured is None or measured.value is None or (measured.n is not None and measured.n < target.min_n):
        return "not measured"
    if target.comparison == "holds":
        return "met" if measured.value is True else "missed"
    if isinstance(measured.value, bool) or target.limit is None:
        raise ValueError(f"{target.key}: a numeric target needs a number and a limit")
    holds = measured.value < target.limit if target.comparison == "<" else measured.value <= target.limit
    return "met" if holds else "missed"


def judge(targets: Iterable[Target], measured: Mapping[str, Measured],
          figures: Mapping[str, tuple[str, Measured, str]] | None = None) -> list[dict[str, Any]]:
    """One entry per target (in the order declared), then one per figure without a target (``key: (what,
    measured, unit)``). A measurement whose key names no target and no figure is an error: it would go unreported."""
    declared = list(targets)
    known = {t.key for t in declared} | set(figures or {})
    unknown = sorted(set(measured) - known)
    if unknown:
        raise ValueError(f"measured but neither a target nor a figure: {unknown}")
    out = [_entry(t.key, t.what, measured.get(t.key), t.unit, t.describe(), verdict(t, measured.get(t.key)))
           for t in declared]
    for key, (what, value, unit) in (figures or {}).items():
        out.append(_entry(key, what, value, unit, "", "no target"))
    return out


def missed(verdicts: Iterable[Mapping[str, Any]]) -> list[str]:
    """The targets missed or not measured (both count as missed)."""
    return [v["key"] for v in verdicts if v["verdict"] in ("missed", "not measured")]


def _entry(key: str, what: str, measured: Measured | None, unit: str, target: str, judged: Verdict) -> dict[str, Any]:
    value = None if measured is None else measured.value
    return {"key": key, "what": what, "value": value, "unit": unit, "n": None if measured is None else measured.n,
            "note": "" if measured is None else measured.note, "target": target, "verdict": judged}


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}"


def show(entry: Mapping[str, Any]) -> str:
    """A verdict's measured value as the table and the docs print it: ``1.18x (n=12)``, ``yes``, ``-``."""
    value = entry["value"]
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    else:
        text = f"{value:,}{entry['unit']}" if isinstance(value, int) else f"{value}{entry['unit']}"
    return text + (f" (n={entry['n']})" if entry.get("n") is not None else "")
