"""Idiom Solitaire's players: the LLM adapter and its prompts, and the scripted baselines."""
