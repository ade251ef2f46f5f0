"""Output for people and programs: tables, figures, a plan rendered, usage against budgets, drift, run ids."""
