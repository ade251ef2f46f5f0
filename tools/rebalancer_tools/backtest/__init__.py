"""Backtest and recommend: what a policy would have done on a cluster's own recorded history (never deployed)."""
