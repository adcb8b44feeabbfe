"""Benchmarks (scripts, not tests): run them from the repository root, see bench/README.md."""
