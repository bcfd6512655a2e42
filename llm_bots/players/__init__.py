"""Players that are not language models: classical search (random, MCTS, ...) and a person at the terminal."""
