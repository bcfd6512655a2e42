"""The players of clembench's games (``clem:<game>``): the clemgames' own programmatic players as baselines."""
