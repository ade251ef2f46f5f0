"""A frozen copy of the allocation engine and planner (allocation.py, planning.py as of 733dd4f, before the speed
work of issue 2 §7): the reference the optimized code must match output for output
(tests/unit/planning/test_plan_equivalence.py). Only imports were changed.

Keep it while planning is being made faster; it stops being meaningful the day the plan's behaviour is changed on
purpose. Then delete this package and the equivalence test rather than edit the copy to follow."""
