"""Named, versioned interval methods: the default is the old betting interval to the bit, the exact methods for
payoffs on a declared support cover at small n and are near the t-interval's width at n = 100."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import numpy as np
import pytest

from analysis.stats import confseq
from analysis.stats.intervals import (
    DEFAULT_METHOD,
    INTERVAL_METHODS,
    INTERVAL_VERSIONS,
    LATEST_VERSION,
    mean_interval,
    mean_intervals,
    win_loss_ratio_interval,
)
from bench.bench_width import t_intervals
from deepeval_games.app.spec.experiment import ExperimentTable, IntervalsVersion

RUNS = 1000


def test_the_default_is_the_old_betting_interval_to_the_bit() -> None:
    assert DEFAULT_METHOD == "betting-eb/1" and all("/" in name for name in INTERVAL_METHODS)
    values = np.random.default_rng(3).beta(2, 5, 20) * 10
    old = confseq.mean_interval(values, 0, 10)
    assert mean_interval(values, 0, 10) == old == mean_interval(values, 0, 10, method="betting-eb/1")
    assert (old.low, old.high) == (1.96, 4.59)  # the number printed before methods had names
    samples = np.random.default_rng(4).uniform(-1, 1, (50, 12))
    for ours, theirs in zip(mean_intervals(samples, -1, 1), confseq.mean_intervals(samples, -1, 1), strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("n", [6, 10, 30])
@pytest.mark.parametrize(
    ("support", "weights"),
    [
        ((-1.0, 0.0, 1.0), (0.3, 0.4, 0.3)),  # tic-tac-toe
        ((-1.0, 0.0, 1.0), (0.05, 0.9, 0.05)),  # mostly draws
        ((-1.0, 0.0, 1.0), (0.7, 0.2, 0.1)),  # a weak player
        ((0.0, 1.0), (0.9, 0.1)),  # a rate
        ((0.0, 0.25), (0.4, 0.6)),  # two values inside the range
    ],
)
def test_exact_intervals_cover_at_small_n(n: int, support: tuple[float, ...], weights: tuple[float, ...]) -> None:
    rng = np.random.default_rng(n)
    x = rng.choice(support, p=weights, size=(RUNS, n))
    low, high = mean_intervals(x, -1.0, 1.0, method="exact-discrete/1", support=support)
    truth = float(np.dot(support, weights))
    assert np.mean((low <= truth) & (truth <= high)) >= 0.94
    assert np.all(high > low)


def test_exact_intervals_are_near_the_t_width_at_n_100() -> None:
    x = np.random.default_rng(0).choice([0.0, 1.0], p=[0.7, 0.3], size=(300, 100))
    low, high = mean_intervals(x, 0.0, 1.0, method="exact-discrete/1", support=(0.0, 1.0))
    t_low, t_high = t_intervals(x)
    assert 0.95 <= np.mean(high - low) / np.mean(t_high - t_low) <= 1.15
    betting_low, betting_high = mean_intervals(x, 0.0, 1.0)
    assert np.mean(betting_high - betting_low) / np.mean(t_high - t_low) > 1.3  # what the exact method saves


def test_three_point_intervals_near_t_at_n_30() -> None:
    x = np.random.default_rng(1).choice([0.0, 0.5, 1.0], p=[0.3, 0.4, 0.3], size=(300, 30))
    low, high = mean_intervals(x, 0.0, 1.0, method="exact-discrete/1", support=(0.0, 0.5, 1.0))
    t_low, t_high = t_intervals(x)
    assert np.mean(high - low) / np.mean(t_high - t_low) <= 1.15


def test_win_loss_ratio_interval_covers_and_says_nothing_without_decisive_matches() -> None:
    assert win_loss_ratio_interval(0, 0) == (-1.0, 1.0)
    rng = np.random.default_rng(2)
    p_win, p_loss = 0.35, 0.15
    truth = (p_win - p_loss) / (p_win + p_loss)
    outcomes = rng.choice([1, 0, -1], p=[p_win, 0.5, p_loss], size=(RUNS, 10))
    bounds = [win_loss_ratio_interval(int((o == 1).sum()), int((o == -1).sum())) for o in outcomes]
    assert np.mean([low <= truth <= high for low, high in bounds]) >= 0.95
    low, high = win_loss_ratio_interval(6, 1)
    assert -1.0 <= low < 5 / 7 < high <= 1.0


def test_bad_requests_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match="unknown interval method"):
        mean_interval([0.0, 1.0], 0, 1, method="t/1")
    with pytest.raises(ValueError, match="support"):
        mean_interval([0.0, 1.0], 0, 1, method="exact-discrete/1")
    with pytest.raises(ValueError, match="off the declared support"):
        mean_interval([0.0, 0.3, 1.0], 0, 1, method="exact-discrete/1", support=(0.0, 0.5, 1.0))
    assert np.isnan(mean_interval([], 0, 1, method="exact-discrete/1", support=(0.0, 1.0)).low)


def test_sequence_intervals_are_the_streamed_sequence() -> None:
    x = np.random.default_rng(5).uniform(0, 4, (3, 25))
    low, high = confseq.sequence_intervals(x, 0.0, 4.0, alpha=0.1)
    for row in range(3):
        sequence = confseq.BettingConfidenceSequence(0.0, 4.0, alpha=0.1)
        for step in range(25):
            interval = sequence.update(x[row, step])
            assert (interval.low, interval.high) == (low[row, step], high[row, step])


def test_the_share_grid_of_the_three_point_tables_is_fine_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.stats import exact

    exact.trinomial_table.cache_clear()
    low, high = exact.trinomial_table(12, 0.5, 0.05, 500)
    monkeypatch.setattr(exact, "NUISANCE_POINTS", 4 * exact.NUISANCE_POINTS)
    exact.trinomial_table.cache_clear()
    fine_low, fine_high = exact.trinomial_table(12, 0.5, 0.05, 500)
    exact.trinomial_table.cache_clear()
    assert np.abs(fine_low - low).max() <= 0.01 and np.abs(fine_high - high).max() <= 0.01


def test_the_interval_policy_is_one_typed_value_with_a_text_form() -> None:
    """The policy travels as a value; its text form (a manifest's, a command line's) reads back to the same value,
    and asking for another version or kind makes a new one."""
    from analysis.stats.intervals import IntervalPolicy

    adaptive = IntervalPolicy.parse("3+anytime:betting:0.05")
    assert adaptive == IntervalPolicy("3", sequence="betting", alpha=0.05) and adaptive.anytime
    assert adaptive.key == "3+anytime:betting:0.05" and IntervalPolicy.parse("2").key == "2"
    assert adaptive.requested(kind="fixed") == IntervalPolicy("3")
    assert adaptive.requested("1") == IntervalPolicy("1", sequence="betting", alpha=0.05)
    assert IntervalPolicy("2").requested(kind="anytime") == IntervalPolicy("2", sequence="betting")
    for bad in ("4", "3+anytime:guess:0.05", "3+anytime:betting:1.5", "3+anytime:betting:x"):
        with pytest.raises(ValueError):
            IntervalPolicy.parse(bad)
    with pytest.raises(ValueError, match="unknown kind"):
        adaptive.requested(kind="sideways")


def test_a_report_resolves_its_policy_once_per_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every section of a variant reads the one policy its context worked out: tables, captions, verdicts and the
    methods line never resolve it again."""
    from analysis.stats.intervals import IntervalPolicy
    from deepeval_games.app.commands.cli import main
    from deepeval_games.app.reports.html import write_html_report
    from deepeval_games.app.reports.report import load_report, text_report

    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[experiment]\nname = "once"\ngame = "tic_tac_toe"\nrepeats = 3\nseed = 1\nintervals = "3"\n'
        '[[players]]\nname = "a"\nbot = "random"\n[[players]]\nname = "b"\nbot = "mcts"\n'
    )
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    calls: list[str] = []
    resolve = IntervalPolicy.for_records

    def counted(self: IntervalPolicy, *args: object, **kwargs: object) -> IntervalPolicy:
        calls.append(self.key)
        return resolve(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(IntervalPolicy, "for_records", counted)
    data = load_report([tmp_path / "run"])
    assert data.intervals == IntervalPolicy("3")  # the stored spec's, resolved once when the runs were opened
    text = text_report(data)
    assert "95% interval" in text and calls == ["3"]
    calls.clear()
    write_html_report([tmp_path / "run"], tmp_path / "html", kind="anytime")
    assert calls == ["3+anytime:betting:0.05"]


def test_the_interval_versions_are_one_list() -> None:
    """The spec's versions (which ``report --intervals`` offers) are those the statistics describe, the newest the
    default of a new spec."""
    assert set(get_args(IntervalsVersion)) == set(INTERVAL_VERSIONS)
    assert ExperimentTable.model_fields["intervals"].default == LATEST_VERSION
