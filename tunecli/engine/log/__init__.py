"""Tuning logs: JSON-lines records (TVM's format) and dispatch from the best of them."""
