"""bbrbench: congestion-control benchmarks in network namespaces (see bench/README.md)."""
