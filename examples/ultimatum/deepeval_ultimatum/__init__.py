"""An ultimatum game with a free-text negotiation phase, as an outside task package of deepeval-games.

:mod:`deepeval_ultimatum.game` is the task (rules, free-text moves, LLM prompt hook); :mod:`deepeval_ultimatum.bots`
holds its scripted baselines. Both register through entry points (see ``pyproject.toml``); nothing here
imports them, so loading one group does not load the other.
"""

__all__: list[str] = []
