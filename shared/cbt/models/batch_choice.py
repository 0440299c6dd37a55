"""How a backlog of an incremental model's intervals runs — its ``batch.mode`` with ``auto`` resolved — and why, in
words for ``cbt render --explain-batching``.

Cheap after the first call per model: ``auto`` for a ``replace`` or ``append`` SQL model parses its SQL once
(``cbt.models.batch_safety``, cached by the fields the analysis reads); the rules before it need no parser.
"""

from __future__ import annotations

import re
from typing import Literal

from cbt.models.spec import BatchChoice, IncrementalModel

_READS_SELF = re.compile(r"\{\{[^}]*\bself\b")


def batch_choice(model: IncrementalModel) -> BatchChoice:
    """The batch mode and why."""
    if model.batch.mode != "auto":
        return BatchChoice(model.batch.mode, f"declared in the model (batch.mode: {model.batch.mode})",
                           is_declared=True)
    if model.sql is None:
        return BatchChoice("off", "an exec model: what its script does with the bounds cannot be checked "
                                  "(declare batch.mode: bounds if one run over a range is the same)")
    if model.write.strategy == "sql":
        return BatchChoice("off", "write strategy sql: the statements are the author's own (declare batch.mode "
                                  "to batch them)")
    if _READS_SELF.search(model.sql) is not None:
        return BatchChoice("off", "the SQL reads the model's own table ({{ self.… }}): in one statement every "
                                  "interval would read it as it was before the batch")
    from cbt.models.batch_safety import choose  # parses SQL with sqlglot: imported only when asked

    return choose(model)


def batch_mode(model: IncrementalModel) -> Literal["union", "bounds", "off"]:
    """How a backlog of the model's intervals runs (``Batch``, with ``auto`` resolved)."""
    return batch_choice(model).mode
