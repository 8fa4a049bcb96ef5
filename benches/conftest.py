"""Benchmarks run only on demand: `pytest benches --benchmark-enable`."""
