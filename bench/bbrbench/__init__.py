"""bbrbench: congestion-control benchmarks in network namespaces (see bench/README.md)."""

# The one place the version is written: pyproject.toml reads it from here.
__version__ = "0.2.0"
