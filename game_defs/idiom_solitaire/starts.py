"""Start idioms for Idiom Solitaire: a seeded sample, as the paper draws 30 start idioms from a database.

A start idiom qualifies when at least one *other* dictionary idiom may follow it under the chain rule
(an idiom that only follows itself, like a lone 天外有天, does not count: the start idiom is already used).

Use the sample from a spec through ``[experiment.sweep]``; print the TOML line with::

    python -m game_defs.idiom_solitaire.starts --count 30 --seed 0

``examples/idiom_scripted.toml`` holds the output for ``count=30, seed=0`` (a test keeps them equal).
The sample depends on the dictionary (its CSV's sha256) and on NumPy's ``Generator.choice``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import numpy as np

from game_defs.idiom_solitaire.dictionary import ChainMode, IdiomDictionary, load_idioms

__all__ = ["playable_start_ids", "sample_start_idioms", "sweep_toml_line"]


def playable_start_ids(match: ChainMode = "exact", dictionary: IdiomDictionary | None = None) -> list[int]:
    """Ids of every idiom that has at least one valid successor other than itself, ascending."""
    d = dictionary if dictionary is not None else load_idioms()
    return [i.id for i in d if any(s != i.id for s in d.successors(i.id, match))]


def sample_start_idioms(
    count: int = 30, seed: int = 0, match: ChainMode = "exact", dictionary: IdiomDictionary | None = None
) -> list[str]:
    """``count`` distinct playable start idioms drawn uniformly with ``numpy.random.default_rng(seed)``.

    Returned in draw order, as dictionary text (usable as the game's ``start`` parameter).
    """
    d = dictionary if dictionary is not None else load_idioms()
    candidates = playable_start_ids(match, d)
    if not 1 <= count <= len(candidates):
        raise ValueError(f"count must be in 1..{len(candidates)}, got {count}")
    picks = np.random.default_rng(seed).choice(len(candidates), size=count, replace=False)
    return [d.text(candidates[int(k)]) for k in picks]


def sweep_toml_line(starts: Sequence[str]) -> str:
    """``start = [...]``: the line to put under ``[experiment.sweep]`` in a spec."""
    return "start = [" + ", ".join(json.dumps(s, ensure_ascii=False) for s in starts) + "]"


def main(argv: Sequence[str] | None = None) -> None:
    """Print the ``[experiment.sweep]`` line for a seeded sample."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--match", choices=("exact", "homophone"), default="exact")
    args = parser.parse_args(argv)
    print(sweep_toml_line(sample_start_idioms(args.count, args.seed, args.match)))


if __name__ == "__main__":
    main()
