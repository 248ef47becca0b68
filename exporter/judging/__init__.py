"""Judging one cycle's client gauges: the version policy's verdict, then the per-cluster cardinality cap."""
