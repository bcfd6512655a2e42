"""``deepeval-games games --all`` on TextArena (issue 44): at least 80 of its 94 base environments playable, each
refusal with its reason, and none that plays today may stop playing. NLTK's word lists are the small fixture of
:mod:`tests.nltk_fixture` in a data folder (never downloaded), as they are on a machine after ``data fetch``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("textarena")
pytest.importorskip("nltk")

import game_defs.arena.textarena  # noqa: F401  (the entry point's module: registers the family)
import game_defs.data_files as tables
from game_defs.arena import textarena_env
from llm_bots.players.classical import family_listing
from tests.nltk_fixture import write_nltk_fixture

PLAYABLE = [
    "2048-v0",
    "Alquerque-v0",
    "Bandit-v0",
    "Battleship-v0",
    "Blackjack-v0",
    "Breakthrough-v0",
    "Briscola-v0",
    "Chopsticks-v0",
    "Codenames-v0",
    "ColonelBlotto-v0",
    "ConnectFour-v0",
    "Countdown-v0",
    "Crosswords-v0",
    "Crusade-v0",
    "Cryptarithm-v0",
    "Debate-v0",
    "DontSayIt-v0",
    "FifteenPuzzle-v0",
    "FrozenLake-v0",
    "GameOfPureStrategy-v0",
    "GermanWhist-v0",
    "Golf-v0",
    "GuessTheNumber-v0",
    "GuessWho-v0",
    "Hangman-v0",
    "HighSociety-v0",
    "IndianPoker-v0",
    "IteratedMatchingPennies-v0",
    "IteratedPrisonersDilemma-v0",
    "IteratedRockPaperScissors-v0",
    "IteratedTwoThirdsAverage-v0",
    "IteratedUltimatumGame-v0",
    "KuhnPoker-v0",
    "LetterAuction-v0",
    "LiarsDice-v0",
    "LightsOut-v0",
    "LinesOfAction-v0",
    "LogicPuzzle-v0",
    "MarketEntryGame-v0",
    "Mastermind-v0",
    "MemoryGame-v0",
    "Minesweeper-v0",
    "NewRecruit-v0",
    "Nim-v0",
    "Othello-v0",
    "PegJump-v0",
    "PigDice-v0",
    "Poker-v0",
    "PublicGoodsGame-v0",
    "QuantumTicTacToe-v0",
    "RushHour-v0",
    "SantoriniBaseFixed-v0",
    "ScenarioPlanning-v0",
    "SecretMafia-v0",
    "Secretary-v0",
    "Set-v0",
    "SettlersOfCatan-v0",
    "SimpleBlindAuction-v0",
    "SimpleNegotiation-v0",
    "SimpleTak-v0",
    "Slitherlink-v0",
    "Snake-v0",
    "Sokoban-v0",
    "SpellingBee-v0",
    "SpiteAndMalice-v0",
    "Stratego-v0",
    "Sudoku-v0",
    "Surround-v0",
    "Taboo-v0",
    "Tak-v0",
    "ThreeCardMonte-v0",
    "ThreePlayerGOPS-v0",
    "ThreePlayerIPD-v0",
    "ThreePlayerTicTacToe-v0",
    "TicTacToe-v0",
    "TowerOfHanoi-v0",
    "TruthAndDeception-v0",
    "TwentyQuestions-v0",
    "TwoDollar-v0",
    "UltimateTicTacToe-v0",
    "WildTicTacToe-v0",
    "WordChains-v0",
    "WordLadder-v0",
    "WordSearch-v0",
    "Wordle-v0",
]
"""TextArena 0.7.4's base environments that an LLM seat plays here (85 of 94; the word games with NLTK's data)."""
UPSTREAM = [
    "Checkers-v0",
    "Chess-v0",
    "IteratedStagHunt-v0",
    "Klondike-v0",
    "ReverseTicTacToe-v0",
    "ScorableGames-v0",
    "UltimateTexasHoldem-v0",
    "UsedCarNegotiation-v0",
    "CharacterConclave-v0",
]
"""The nine refused: TextArena's own bugs on this Python (a file that does not compile, a file it lacks, a call
that fails in play)."""


@pytest.fixture
def word_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The NLTK fixture in ``DEEPEVAL_GAMES_DATA``, its sha256 in place of the published, downloads off."""
    sums = write_nltk_fixture(tmp_path / "data")
    monkeypatch.setenv("DEEPEVAL_GAMES_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("DEEPEVAL_GAMES_OFFLINE", "1")
    for relpath, sha256 in sums.items():
        monkeypatch.setitem(tables.EXPECTED_SHA256, relpath, sha256)
    textarena_env.facts.cache_clear()
    yield
    textarena_env.facts.cache_clear()


@pytest.mark.slow
def test_at_least_80_environments_play_and_none_that_played_stops(word_lists: None) -> None:
    lines = [line for line in family_listing("textarena:") if line.startswith("textarena:")]
    verdicts = {m.group(1): m.group(2) for m in (re.match(r"textarena:(\S+)  \[(.*?)\]", line) for line in lines) if m}
    assert len(verdicts) == 94
    playable = sorted(env for env, verdict in verdicts.items() if verdict.startswith("playable by LLM"))
    assert len(playable) >= 80
    stopped = [env for env in PLAYABLE if env not in playable]
    assert not stopped, f"no longer playable: {[(env, verdicts.get(env)) for env in stopped]}"
    refused = {env: verdict for env, verdict in verdicts.items() if env not in playable}
    assert sorted(refused) == sorted(UPSTREAM)
    assert all(verdict.startswith("refused: upstream bug: TextArena 0.7.4") for verdict in refused.values()), refused
