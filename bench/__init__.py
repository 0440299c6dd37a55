"""Benchmarks on the real local stack (ARCHITECTURE.md, performance targets): numbers and ratios, never timed tests."""
