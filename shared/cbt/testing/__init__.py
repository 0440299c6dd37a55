"""Test doubles that follow the production contracts (checked by contract tests against the real adapters).

Production code never imports this package (``tests/unit/test_distributions.py`` checks it).
"""
