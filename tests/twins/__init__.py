"""In-memory twins of the stores, for tests only: they follow the production contracts (checked by contract tests
against the real adapters).

They live under ``tests/``, outside the ``cbt`` namespace, so no production wheel ships them; production code never
imports them (``tests/unit/test_distributions.py`` checks it).
"""
