"""The local model: the llama.cpp server (:mod:`~llm_bots.local.server`, which starts each model's server process,
:mod:`~llm_bots.local.serve`, as ``python -m llm_bots.local.serve``) and its JSON-schema bounds
(:mod:`~llm_bots.local.grammar`)."""
