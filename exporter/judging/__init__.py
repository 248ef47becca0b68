"""Judging one cycle's readings: client gauges by the version policy, then the per-cluster cardinality cap
(``clients``); KIP-896 deprecated requests by the upgrade target (``upgrade``)."""
