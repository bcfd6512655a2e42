"""Statistics over repeats: confidence intervals and sequences, stopping rules, active matchmaking, convergence,
correlation, ratings and equilibria (alpha-Rank, Nash)."""
