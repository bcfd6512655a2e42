"""Benchmarks of deepeval-games (run on demand, never in the test suite): ``python -m bench``."""
