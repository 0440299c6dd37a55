"""Benchmarks on the real local stack: numbers and ratios, never timed tests.

The targets: docs/design/index.md#performance-targets."""
