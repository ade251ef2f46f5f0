"""A frozen copy of the allocation engine and planner as of 5e224a6, before the speed work: the reference the
optimized code must match output for output (tests/unit/planning/test_plan_equivalence.py)."""
