"""Code Review's players: the LLM adapter and its prompts, and the scripted programmer and reviewer."""
