"""The Public Goods Game's players: the LLM adapter and its prompts, reading an amount from a reply, and the
scripted baselines."""
