"""Scripted players for Idiom Solitaire (``deepeval_idiom_solitaire``).

Each bot reads only its seat's observation fields (the chain so far as dictionary ids and the chain rule),
as an LLM seat would read the chain joined with →. A *valid* reply follows the last idiom under the
game's ``match`` rule and is not in the chain yet.

* ``idiom_dictionary`` — knows every idiom; a uniformly random valid reply. With none left it gives the
  invalid reply (and loses).
* ``idiom_strategic`` — knows every idiom; the valid reply that leaves the opponent the fewest valid
  replies (a dead end wins at once); ties broken at random.
* ``idiom_limited`` — knows a seeded fraction of the dictionary (``fraction``, default 0.2, drawn with
  ``vocabulary_seed``, default 0: the same vocabulary in every match); a random valid reply it knows.
  A tunable weak baseline.
* ``idiom_phrasebook`` — knows every idiom, plus a list of ``answers`` of its own (``answers``, e.g. idioms the
  dictionary lacks): it plays the first of them that starts with the required character and is not used yet,
  as free text where the game takes it (the referee mode, ``validity=dictionary+judge``), else a random valid
  dictionary reply. Exercises the judge offline.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.bot import Decision, Observation, SyncBot
from deepeval_games.core.registry.bots import register_bot
from game_defs.idiom_solitaire.dictionary import ChainMode, IdiomDictionary, load_idioms
from game_defs.idiom_solitaire.game import DEFAULT_DICTIONARY, dictionary

__all__ = [
    "DictionaryIdiomBot",
    "LimitedIdiomBot",
    "PhrasebookIdiomBot",
    "StrategicIdiomBot",
    "known_vocabulary",
    "opponent_replies",
    "valid_replies",
]

_IDIOM = ("deepeval_idiom_solitaire",)


def valid_replies(chain_ids: Sequence[int], match: ChainMode, dictionary: IdiomDictionary | None = None) -> list[int]:
    """Ids that may follow the last idiom of ``chain_ids`` and are not in it yet, ascending."""
    d = dictionary if dictionary is not None else load_idioms()
    used = set(chain_ids)
    return [i for i in d.successors(chain_ids[-1], match) if i not in used]


def opponent_replies(
    candidate: int, used: Collection[int], match: ChainMode, dictionary: IdiomDictionary | None = None
) -> int:
    """How many valid replies the opponent has after ``candidate`` is played on a chain holding ``used``."""
    d = dictionary if dictionary is not None else load_idioms()
    successors = d.successors(candidate, match)
    taken = sum(1 for u in used if d.follows(candidate, u, match))  # ``used`` is short: cheaper than a set op
    return len(successors) - taken - (1 if d.follows(candidate, candidate, match) else 0)


@functools.lru_cache(maxsize=16)
def known_vocabulary(fraction: float, vocabulary_seed: int, size: int | None = None) -> frozenset[int]:
    """The dictionary ids a limited player knows: ``round(fraction * N)`` ids drawn with ``vocabulary_seed``, of a
    dictionary of ``size`` idioms (default: the Xinhua list's)."""
    size = len(load_idioms()) if size is None else size
    count = round(fraction * size)
    picks = np.random.default_rng(vocabulary_seed).choice(size, size=count, replace=False)
    return frozenset(int(i) for i in picks)


class _IdiomBot(SyncBot):
    """Shared plumbing: read the chain, answer with an idiom or the invalid reply."""

    def __init__(self, player_id: int, rng: np.random.Generator | None = None, *, game: pyspiel.Game) -> None:
        super().__init__(player_id, rng)
        self.dictionary = dictionary(str(game.get_parameters().get("dictionary", DEFAULT_DICTIONARY)))

    def replies(self, fields: Mapping[str, Any]) -> list[int]:
        """Valid replies this bot can think of."""
        chain = fields["chain_ids"]
        if chain[-1] < len(self.dictionary):
            return valid_replies(chain, fields["match"], self.dictionary)
        # after an answer the judge accepted (referee mode): not a dictionary idiom, so start from its last character
        ids = set(self.dictionary.ids_starting_with(fields["required_char"]))
        if fields["match"] == "homophone" and fields["required_syllable"]:
            ids |= set(self.dictionary.ids_starting_with_pinyin(fields["required_syllable"]))
        return sorted(ids - set(chain))

    def answer(self, observation: Observation, action: int | None) -> Decision:
        """The decision for ``action``; ``None`` gives the invalid reply."""
        if action is None:
            return Decision.move(int(observation.fields["invalid_action"]), "我想不出来了。")
        return Decision.move(int(action), self.dictionary.text(action))

    def identity(self) -> dict[str, Any]:
        return {"kind": "scripted", "class": type(self).__name__}


@register_bot("idiom_dictionary", games=_IDIOM)
class DictionaryIdiomBot(_IdiomBot):
    """Knows every idiom; plays a uniformly random valid reply (the invalid reply when none is left)."""

    def respond(self, observation: Observation) -> Decision:
        options = self.replies(observation.fields)
        return self.answer(observation, int(self.rng.choice(options)) if options else None)


@register_bot("idiom_strategic", games=_IDIOM)
class StrategicIdiomBot(_IdiomBot):
    """Knows every idiom; plays the valid reply that leaves the opponent the fewest replies (ties at random)."""

    def respond(self, observation: Observation) -> Decision:
        fields = observation.fields
        options = self.replies(fields)
        if not options:
            return self.answer(observation, None)
        used = [i for i in fields["chain_ids"] if i < len(self.dictionary)]  # judged answers are not in it
        match = fields["match"]
        counts = np.array([opponent_replies(c, used, match, self.dictionary) for c in options])
        best = np.flatnonzero(counts == counts.min())
        return self.answer(observation, options[int(self.rng.choice(best))])


@register_bot("idiom_limited", games=_IDIOM)
class LimitedIdiomBot(_IdiomBot):
    """Knows a seeded ``fraction`` of the idioms; plays a random valid reply among those it knows."""

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        fraction: float = 0.2,
        vocabulary_seed: int = 0,
    ) -> None:
        super().__init__(player_id, rng, game=game)
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], got {fraction}")
        self.fraction = float(fraction)
        self.vocabulary_seed = int(vocabulary_seed)
        self.vocabulary = known_vocabulary(self.fraction, self.vocabulary_seed, len(self.dictionary))

    def replies(self, fields: Mapping[str, Any]) -> list[int]:
        return [i for i in super().replies(fields) if i in self.vocabulary]

    def respond(self, observation: Observation) -> Decision:
        options = self.replies(observation.fields)
        return self.answer(observation, int(self.rng.choice(options)) if options else None)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "fraction": self.fraction, "vocabulary_seed": self.vocabulary_seed}


@register_bot("idiom_phrasebook", games=_IDIOM)
class PhrasebookIdiomBot(_IdiomBot):
    """Plays its own ``answers`` first where they continue the chain, else a random valid dictionary reply."""

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        answers: Sequence[str] = (),
    ) -> None:
        super().__init__(player_id, rng, game=game)
        if isinstance(answers, str) or not all(isinstance(a, str) and len(a) == 4 for a in answers):
            raise ValueError(f"answers must be a list of four-character idioms, got {answers!r}")
        self.answers = tuple(answers)

    def respond(self, observation: Observation) -> Decision:
        """The first own answer that starts right and is unused (free text); else a random valid reply."""
        fields = observation.fields
        for answer in self.answers:
            if answer[0] == fields["required_char"] and answer not in fields["chain"]:
                if observation.free_text:
                    return Decision(action=None, text=answer)
                known = self.dictionary.id_of(answer)
                return self.answer(observation, known)
        options = self.replies(fields)
        return self.answer(observation, int(self.rng.choice(options)) if options else None)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "answers": list(self.answers)}
