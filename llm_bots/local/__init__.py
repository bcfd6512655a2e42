"""The local model: the llama.cpp server (run as ``python -m llm_bots.local.server``) and its JSON-schema bounds."""
