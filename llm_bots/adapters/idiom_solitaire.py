"""LLM adapter of Idiom Solitaire: the paper's prompt content (in our words) and the idiom reply parser.

A reply is read with :func:`game_defs.idiom_solitaire.reply_to_action` (NFKC, punctuation and spaces
dropped, traditional -> simplified, words around the idiom ignored, the last dictionary idiom wins):

* it names a dictionary idiom: that idiom is the move, even if it breaks the chain rule or repeats one
  (the game judges it: such a move loses, as in the paper);
* it holds a four-character Chinese word that is not in the dictionary: the move "not an idiom", which
  loses at once (the raw reply stays in the record as the turn's text);
* it holds no four-character Chinese word at all (empty, prose, a wrong length): a format error, re-asked
  with the reason; after the re-asks the game's penalty (the same "not an idiom" move) applies.
"""

from __future__ import annotations

from typing import Any

from deepeval_games.bot import Observation
from game_defs.idiom_solitaire import dictionary
from llm_bots.adapters import Parsed, TaskAdapter, register_adapter

__all__ = ["IdiomSolitaireAdapter", "parse_idiom"]


def parse_idiom(reply: str, invalid_action: int) -> Parsed:
    """The move a reply names (see the module docs); ``Parsed.error`` when it names no candidate at all."""
    found = dictionary().parse_reply(reply or "")
    if found.idiom_id is not None:
        return Parsed(action=int(found.idiom_id), text=reply)
    if found.text is not None:
        return Parsed(action=invalid_action, text=reply)
    return Parsed(error="no four-character Chinese idiom was found in the reply.")


@register_adapter("deepeval_idiom_solitaire")
class IdiomSolitaireAdapter(TaskAdapter):
    """Prompts and parser for ``deepeval_idiom_solitaire``."""

    task = "idiom_solitaire"

    def values(self, observation: Observation) -> dict[str, Any]:
        fields = observation.fields
        return {
            "seat_label": self.seat_label(observation),
            "start": fields["chain"][0],
            "max_turns": fields["max_turns"],
            "chain": fields["chain_text"],
            "required_char": fields["required_char"],
            "required_syllable": fields["required_syllable"],
        }

    def turn_prompt(self, observation: Observation, first_turn: bool) -> str:
        values = self.values(observation)
        homophone = observation.fields["match"] == "homophone"
        parts = []
        if first_turn:
            parts.append(self.prompts.render("player", "rules_homophone" if homophone else "rules_exact", **values))
        parts.append(self.prompts.render("player", "turn_homophone" if homophone else "turn", **values))
        return "\n\n".join(part.strip() for part in parts)

    def parse(self, reply: str, observation: Observation) -> Parsed:
        parsed = parse_idiom(reply, int(observation.fields["invalid_action"]))
        if parsed.ok and parsed.action not in observation.legal_actions:
            return Parsed(error=f"{reply!r} is not a move now.")
        return parsed
