"""The clemgames' own programmatic players as a baseline: ``clem_programmatic``.

A clemgame's player class says how it answers without a model (clemcore's ``_custom_response``: often a fixed or
rule-made reply the game's authors use to test the game). ``clem_programmatic`` in a seat of a ``clem:`` game
replies what that seat's player class would: the game hands it as the seat's observation field
``programmatic_reply`` (:meth:`game_defs.arena.clembench.ClemState.observation_fields`), computed from what the seat
was shown. A seat whose player has no such reply answers with an empty reply, which the game treats as one it cannot
parse.
"""

from __future__ import annotations

from deepeval_games.core.bot import Decision, Observation, SyncBot
from deepeval_games.core.registry.bots import register_bot
from game_defs.arena.clembench import PREFIX

__all__ = ["ClemProgrammatic"]


@register_bot("clem_programmatic", games=(PREFIX,))
class ClemProgrammatic(SyncBot):
    """The clemgame's own programmatic player of the seat (its ``_custom_response``)."""

    def respond(self, observation: Observation) -> Decision:
        """The seat's programmatic reply, as free text (an empty reply where the seat has none)."""
        reply = observation.fields.get("programmatic_reply")
        return Decision(None, reply if isinstance(reply, str) else "")
