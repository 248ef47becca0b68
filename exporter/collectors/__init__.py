"""Collectors: one snapshot in, fresh Prometheus metric families out (nothing is kept between scrapes)."""
