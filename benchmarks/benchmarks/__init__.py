"""fastnn's asv benchmarks (run from the ``benchmarks/`` directory; see README.md)."""
