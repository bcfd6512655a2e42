"""Translation's players: the LLM adapter and its prompts, and the scripted translator and proofreader."""
