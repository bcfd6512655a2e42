"""LLM adapter of Idiom Solitaire: the answer format and the idiom reply parser.

The rules and the chain so far reach the model through the message pool (the game's rules text and
observations); the prompt file (``llm_bots/idiom_solitaire/prompts.toml``) holds, per chain rule (``exact``,
``homophone``), the answer format and the re-ask text (naming the required first character only with the game's
``hint``), and the reasons a reply is not usable.

A reply is read with :meth:`~game_defs.idiom_solitaire.dictionary.IdiomDictionary.parse_reply` (NFKC, punctuation and
spaces dropped, traditional -> simplified, words around the idiom ignored, the last dictionary idiom wins):

* it names a dictionary idiom: that idiom is the move, even if it breaks the chain rule or repeats one
  (the game judges it: such a move loses, as in the paper);
* it holds a four-character Chinese word that is not in the dictionary: the move "not an idiom", which
  loses at once (the raw reply stays in the record as the turn's text);
* it holds no four-character Chinese word at all (empty, prose, a wrong length): a format error, re-asked
  with the reason; after the re-asks the game's penalty (the same "not an idiom" move) applies.

In the referee mode (game parameter ``validity=dictionary+judge``) a four-character word outside the dictionary
is a free-text move instead (the game interns it and the judge rules on it), and the judge seat (role
``judge`` of the prompt file) answers with a one-role verdict, ``{"Idiom": {"evaluation": ..., "score": 0|1}}``,
read by :func:`~llm_bots.judge.parse_judge_reply`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from deepeval_games.core.bot import Observation
from deepeval_games.core.records import JUDGE_SEAT
from game_defs.idiom_solitaire.game import DEFAULT_DICTIONARY, IdiomFields, dictionary
from llm_bots.adapters import Parsed, TaskAdapter, register_adapter
from llm_bots.judge.schema import judge_response_schema
from llm_bots.judge.verdict import parse_judge_reply
from llm_bots.prompts import load_prompts

__all__ = ["IdiomSolitaireAdapter", "parse_idiom"]

_TASK = "idiom_solitaire"


def _reason(name: str, **values: Any) -> str:
    return load_prompts(_TASK).render("reasons", name, **values).strip()


def parse_idiom(reply: str, invalid_action: int, version: str = DEFAULT_DICTIONARY) -> Parsed:
    """The move a reply names in dictionary ``version`` (see the module docs); ``Parsed.error`` when it names
    no candidate at all."""
    found = dictionary(version).parse_reply(reply or "")
    if found.idiom_id is not None:
        return Parsed(action=int(found.idiom_id), text=reply)
    if found.text is not None:
        return Parsed(action=invalid_action, text=reply)
    return Parsed(error=_reason("no_idiom"))


@register_adapter("deepeval_idiom_solitaire")
class IdiomSolitaireAdapter(TaskAdapter):
    """Answer texts and parser for ``deepeval_idiom_solitaire``."""

    task = _TASK

    def role(self, observation: Observation) -> str:
        """``judge`` for the judge seat (referee mode), else the chain rule: ``exact`` or ``homophone`` (a table of
        the prompt file each)."""
        if observation.seat == JUDGE_SEAT:
            return "judge"
        return cast(IdiomFields, observation.fields)["match"]

    def values(self, observation: Observation) -> dict[str, Any]:
        if observation.seat == JUDGE_SEAT:
            return {}
        fields = cast(IdiomFields, observation.fields)
        return {"required_char": fields["required_char"], "required_syllable": fields["required_syllable"]}

    def format_text(self, observation: Observation) -> str:
        """The answer format: naming the required first character only with the game's ``hint``."""
        if observation.seat == JUDGE_SEAT:
            return self.prompts.render("judge", "format").strip()
        name = "format" if cast(IdiomFields, observation.fields)["hint"] else "format_chain"
        return self.prompts.render(self.role(observation), name, **self.values(observation)).strip()

    def reask_text(self, observation: Observation, error: str) -> str:
        """The re-ask, naming the required first character only with the game's ``hint``."""
        if observation.seat == JUDGE_SEAT:
            return self.prompts.render("judge", "reask", reason=error).strip()
        name = "reask" if cast(IdiomFields, observation.fields)["hint"] else "reask_chain"
        return self.prompts.render(self.role(observation), name, reason=error, **self.values(observation)).strip()

    def parse(self, reply: str, observation: Observation) -> Parsed:
        if observation.seat == JUDGE_SEAT:
            return parse_judge_reply(reply, observation)
        version = str(observation.params.get("dictionary", DEFAULT_DICTIONARY))
        invalid = cast(IdiomFields, observation.fields)["invalid_action"]
        parsed = parse_idiom(reply, invalid, version)
        if observation.free_text and parsed.action == invalid:  # referee mode: the game interns it, the judge rules
            return Parsed(text=reply)
        if parsed.ok and parsed.action not in observation.legal_actions:
            return Parsed(error=_reason("not_a_move", reply=repr(reply)))
        return parsed

    def response_schema(self, observation: Observation) -> Mapping[str, Any] | None:
        """The verdict's JSON schema for the judge seat; none for the players."""
        return judge_response_schema(observation)
