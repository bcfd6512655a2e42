"""The paper's Tables 4–6 for Machine Translation, chrF and BLEU grids beside them, the judge's agreement with chrF.

Reads match records only. One table set per translation direction (the game parameter ``pair``: Table 4
is de-en, Table 5 en-fr, Table 6 en-zh; directions are never pooled), every paragraph and repeat of a
direction pooled. Rows are the proofreader, columns the translator (the paper's layout); each cell pools
the matches of that ordered pair:

* the judge table: the translator's mean score s_T and the proofreader's mean score s_Pr (the returns,
  which are the judge's verdict); the last column is each proofreader's mean s_Pr over its row, the last
  row each translator's mean s_T over its column — unweighted means of cell values, self-play cells (if
  any) shown but left out of the means, as in the paper;
* the chrF grid: per pair the mean chrF of the translation (T), of the proofread text (Pr) and the
  proofreading gain (Pr minus T), all against the reference (``record.metrics``, from the scorer; chrF of each
  paragraph, averaged over the pair's matches); the last row is each translator's mean chrF of the
  translation, the last columns each proofreader's mean chrF of the proofread text and mean gain. Matches
  without the metric are left out of that grid and counted;
* the BLEU grid: corpus BLEU, the BLEU that MT work reports (sacrebleu's ``corpus_bleu``: one score over all
  the texts, from n-gram counts summed over them, never a mean of per-text scores), of the pair's translations
  (T) and proofread texts (Pr) against the references, and the gain; the margins score each player's texts
  in that role pooled into one corpus (self-play left out). It is computed from the BLEU statistics the scorer
  records per match (``bleu_stats_*``, :func:`corpus_bleu`) and printed with sacrebleu's signature; matches
  recorded before those statistics existed are left out and counted. The paper reports no BLEU: this grid, like
  chrF, is a reference check beside the judge;
* the sentence-BLEU grid, an extra: each paragraph's BLEU scored alone (effective order), averaged as the chrF
  grid is; it is not comparable with corpus BLEU or with BLEU figures elsewhere;
* the judge–chrF agreement, per role, over the matches that have both (:mod:`analysis.stats.correlation`):
  the translator's judge score against the chrF of its translation, and the proofreader's judge score
  against the chrF gain (the judge is asked whether the proofread text is more accurate than the
  translation, which is what the gain measures) and against the chrF of the proofread text.

Each cell's numbers have 95% intervals valid at any number of matches (:mod:`analysis.tables.payoffs`: the judge's
scores
on its scale, the game's payoff range; chrF and BLEU on [0, 100], the gain on [-100, 100]). A judge-table cell is
marked ``*`` when s_T - s_Pr, compared match by match, is resolved (its interval excludes 0), a metric-grid cell when
its gain is. With a few matches per cell most are unresolved.

Print everything for a run directory, and save a figure per direction (grids and scatter plots)::

    deepeval-games tables translation runs/translation-demo --plot runs/translation-demo/tables4-6.png
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyspiel

from analysis.formatting import format_number
from analysis.stats.confseq import Interval, records_bounds
from analysis.stats.correlation import Correlation, correlate, correlation_line, correlation_scatter
from analysis.tables.payoffs import (
    PairKey,
    PairTable,
    agg_figure,
    format_cell_intervals,
    format_pair_table,
    metric_value,
    pair_heatmap,
    pool_pairs,
    role_seats,
    save_figure,
    task_records,
)
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import game_variant

__all__ = [
    "BLEU_STATS",
    "CORPUS_BLEU",
    "GAME",
    "METRICS",
    "TABLE_NUMBERS",
    "BleuCounts",
    "MetricCell",
    "RoleCorrelation",
    "TranslationCell",
    "TranslationTable",
    "bleu_counts",
    "corpus_bleu",
    "format_corpus_bleu_table",
    "format_metric_intervals",
    "format_metric_table",
    "format_score_intervals",
    "format_score_table",
    "judge_correlations",
    "plot_translation_tables",
    "print_tables",
    "record_pair",
    "translation_groups",
    "translation_table",
]

GAME = "deepeval_translation"
FIGURE_TITLE = "Judge scores and chrF per pair of players, per direction"
"""The title the HTML report gives this module's figure."""
"""Short name of the game whose records these tables read."""
TABLE_NUMBERS = {"de-en": 4, "en-fr": 5, "en-zh": 6}
"""The paper's table number of each direction."""
METRICS = ("chrf", "bleu")
"""The per-paragraph reference metrics with a grid of means: ``record.metrics`` holds ``<metric>_translation``,
``_proofread``, ``_gain`` (``bleu``: sentence-level BLEU)."""
_METRIC_NAMES = {"chrf": "chrF", "bleu": "sentence BLEU"}
_METRIC_RANGE = (0.0, 100.0)
"""The range of chrF and BLEU (sacrebleu's scale)."""
BLEU_STATS = ("bleu_stats_translation", "bleu_stats_proofread")
"""The metrics holding BLEU's sufficient statistics of a match's two texts (sacrebleu's segment statistics:
the text's and the reference's lengths, then the matching and total n-grams of each order)."""
CORPUS_BLEU = "corpus BLEU"
"""The name of corpus BLEU in titles, captions and :attr:`TranslationTable.unmeasured`."""


@dataclass(frozen=True)
class MetricCell:
    """One reference metric of a pair, against the reference translation (NaN when no match has it)."""

    translation: float
    """Mean metric of the translator's text."""
    proofread: float
    """Mean metric of the proofreader's text."""
    gain: float
    """Mean proofreading gain (proofread minus translation)."""
    measured: int
    """Matches with the metric."""
    translation_ci: Interval
    """The translation's metric with its 95% interval."""
    proofread_ci: Interval
    """The proofread text's metric with its 95% interval."""
    gain_ci: Interval
    """The gain with its 95% interval (resolved when it excludes 0)."""


def corpus_bleu(statistics: Sequence[int | float]) -> float:
    """Corpus BLEU from BLEU's sufficient statistics summed over the texts of a corpus (the layout of ``bleu_stats_*``).

    sacrebleu's own computation with ``corpus_bleu``'s defaults (exponential smoothing, no effective order, up to
    4-grams), so it equals ``sacrebleu.corpus_bleu(texts, [references]).score`` with the scorer's tokeniser. NaN
    for no statistics.
    """
    from sacrebleu.metrics import BLEU

    if not statistics:
        return math.nan
    corpus = BLEU()  # only its scoring settings are read: the statistics are already counted
    order = corpus.max_ngram_order
    stats = [int(v) for v in statistics]
    if len(stats) != 2 + 2 * order:
        raise ValueError(f"BLEU statistics have {2 + 2 * order} numbers, got {len(stats)}")
    return float(
        BLEU.compute_bleu(
            correct=stats[2 : 2 + order],
            total=stats[2 + order :],
            sys_len=stats[0],
            ref_len=stats[1],
            smooth_method=corpus.smooth_method,
            smooth_value=corpus.smooth_value,
            effective_order=corpus.effective_order,
            max_ngram_order=order,
        ).score
    )


def _summed(first: Sequence[int], second: Sequence[int]) -> tuple[int, ...]:
    if not first:
        return tuple(second)
    return tuple(a + b for a, b in zip(first, second, strict=True))


@dataclass(frozen=True)
class BleuCounts:
    """BLEU's statistics of some matches' translations and proofread texts, each summed: two corpora."""

    translation: tuple[int, ...] = ()
    proofread: tuple[int, ...] = ()
    measured: int = 0
    """Matches counted."""

    def __add__(self, other: BleuCounts) -> BleuCounts:
        return BleuCounts(
            _summed(self.translation, other.translation),
            _summed(self.proofread, other.proofread),
            self.measured + other.measured,
        )

    def scores(self) -> MetricCell:
        """Corpus BLEU of the translations, of the proofread texts, and the gain (NaN when nothing is counted)."""
        translation, proofread = corpus_bleu(self.translation), corpus_bleu(self.proofread)
        gain = proofread - translation
        # a corpus score is no mean of bounded values: no interval of the kind the other cells carry holds for it
        unbounded = [Interval(-math.inf, math.inf, value, self.measured) for value in (translation, proofread, gain)]
        return MetricCell(translation, proofread, gain, self.measured, *unbounded)


def bleu_counts(record: MatchRecord) -> BleuCounts | None:
    """The BLEU statistics a match recorded (``bleu_stats_*``); None for a record made before the scorer kept them."""
    translation, proofread = (record.metrics.get(key) for key in BLEU_STATS)
    if translation is None or proofread is None:
        return None
    return BleuCounts(tuple(int(v) for v in translation), tuple(int(v) for v in proofread), 1)


@dataclass(frozen=True)
class TranslationCell:
    """One ordered pair (proofreader, translator)."""

    translator_score: float
    """s_T: the judge's mean score of the translator."""
    proofreader_score: float
    """s_Pr: the judge's mean score of the proofreader."""
    matches: int
    translator_ci: Interval
    """s_T with its 95% interval."""
    proofreader_ci: Interval
    """s_Pr with its 95% interval."""
    difference: Interval
    """s_T - s_Pr, match by match, with its 95% interval (resolved when it excludes 0)."""
    metrics: dict[str, MetricCell] = field(default_factory=dict)
    """Per metric of :data:`METRICS`."""
    bleu: BleuCounts = field(default_factory=BleuCounts)
    """The BLEU statistics of the pair's texts, summed (corpus BLEU: ``bleu.scores()``)."""


@dataclass(frozen=True)
class TranslationTable(PairTable[TranslationCell]):
    """One of Tables 4–6 and its metric grids: cells keyed by (proofreader, translator)."""

    pair: str
    """The translation direction (``de-en``, ``en-fr``, ``en-zh``)."""
    players: tuple[str, ...]
    cells: dict[PairKey, TranslationCell] = field(default_factory=dict)
    unmeasured: dict[str, int] = field(default_factory=dict)
    """Per metric (and :data:`CORPUS_BLEU`), the matches without it."""
    bleu_signatures: tuple[str, ...] = ()
    """sacrebleu's signatures of corpus BLEU the records name (one, unless scorers of different versions wrote them)."""

    @property
    def number(self) -> int | None:
        """The paper's table number of the direction (None for another direction)."""
        return TABLE_NUMBERS.get(self.pair)

    def proofreader_mean(self, player: str) -> float:
        """Mean s_Pr over the row of ``player``."""
        return self.row_mean(player, lambda c: c.proofreader_score)

    def translator_mean(self, player: str) -> float:
        """Mean s_T over the column of ``player``."""
        return self.column_mean(player, lambda c: c.translator_score)

    def proofreader_bleu(self, player: str) -> MetricCell:
        """Corpus BLEU over the row of ``player`` (every text of its pairs as proofreader, self-play left out)."""
        return sum(
            (c.bleu for (row, column), c in self.cells.items() if row == player and column != player), BleuCounts()
        ).scores()

    def translator_bleu(self, player: str) -> MetricCell:
        """Corpus BLEU over the column of ``player`` (every text of its pairs as translator, self-play left out)."""
        return sum(
            (c.bleu for (row, column), c in self.cells.items() if column == player and row != player), BleuCounts()
        ).scores()


@dataclass(frozen=True)
class RoleCorrelation:
    """The judge's score of one role against one reference measure, per match."""

    label: str
    """What is correlated, in words."""
    x_label: str
    """The reference measure (the scatter plot's x axis)."""
    y_label: str
    """The judge's score (the y axis)."""
    points: tuple[tuple[float, float], ...]
    """(reference, judge score) per match that has both."""
    correlation: Correlation


def record_pair(record: MatchRecord) -> str:
    """The direction of a record: the game parameter ``pair``, else ``metrics["pair"]``; ``?`` if neither."""
    params = pyspiel.game_parameters_from_string(record.game)
    pair = params.get("pair", record.metrics.get("pair"))
    return str(pair) if pair else "?"


def _seats(record: MatchRecord) -> tuple[int, int]:
    """(translator seat, proofreader seat)."""
    return role_seats(record, "translator", "proofreader")


def translation_groups(records: Iterable[MatchRecord]) -> dict[str, list[MatchRecord]]:
    """The complete translation records per table: one group per direction (Tables 4, 5, 6 first).

    A direction played in more than one game variant (other parameters than the paragraph differ) gives
    one group per variant, keyed ``<pair> <variant>``.
    """
    split: dict[tuple[str, str], list[MatchRecord]] = {}
    for record in task_records(records, GAME):
        split.setdefault((record_pair(record), game_variant(record.game)), []).append(record)
    pairs = [pair for pair, _ in split]
    order = sorted(split, key=lambda key: (TABLE_NUMBERS.get(key[0], len(TABLE_NUMBERS) + 4), key))
    return {(pair if pairs.count(pair) == 1 else f"{pair} {variant}"): split[pair, variant] for pair, variant in order}


def translation_table(records: Iterable[MatchRecord], players: Sequence[str] | None = None) -> TranslationTable:
    """Pool the translation records of one direction per (proofreader, translator) pair.

    ``players`` fixes the row/column order (and drops other players); by default every player seen, sorted.

    Raises:
        ValueError: the records hold more than one direction (tables never pool directions).
    """
    task = task_records(records, GAME)
    pairs = sorted({record_pair(r) for r in task})
    if len(pairs) > 1:
        raise ValueError(f"translation records of {len(pairs)} directions ({', '.join(pairs)}): one table each")
    names = [f"{metric}_{part}" for metric in METRICS for part in ("translation", "proofread", "gain")]
    order, pooled = pool_pairs(
        task,
        lambda r: _seats(r)[::-1],  # rows: the proofreader
        lambda r, proofreader, translator: (
            float(r.returns[translator]),
            float(r.returns[proofreader]),
            *(metric_value(r, name) for name in names),
        ),
        players,
    )
    scale = records_bounds(task) if task else None  # the judge's scale: the game pays its verdict
    counts: dict[PairKey, BleuCounts] = {}
    for record in task:
        translator, proofreader = _seats(record)
        key = (record.seats[proofreader], record.seats[translator])
        counted = bleu_counts(record)
        if counted is not None:
            counts[key] = counts.get(key, BleuCounts()) + counted
    cells = {}
    for key, s in pooled.items():
        metrics = {}
        for i, metric in enumerate(METRICS):
            first = 2 + 3 * i
            translation, proofread, gain = s.means[first : first + 3]
            metrics[metric] = MetricCell(
                translation,
                proofread,
                gain,
                measured=s.counts[first],
                translation_ci=s.interval(first, _METRIC_RANGE),
                proofread_ci=s.interval(first + 1, _METRIC_RANGE),
                gain_ci=s.interval(first + 2, (-_METRIC_RANGE[1], _METRIC_RANGE[1])),
            )
        cells[key] = TranslationCell(
            s.means[0],
            s.means[1],
            s.matches,
            translator_ci=s.interval(0, scale),
            proofreader_ci=s.interval(1, scale),
            difference=s.difference(0, 1, scale),
            metrics=metrics,
            bleu=counts.get(key, BleuCounts()),
        )
    unmeasured = {metric: sum(metric_value(r, f"{metric}_translation") is None for r in task) for metric in METRICS}
    unmeasured[CORPUS_BLEU] = sum(bleu_counts(r) is None for r in task)
    signatures = tuple(
        sorted({str(r.metrics["bleu_corpus_signature"]) for r in task if "bleu_corpus_signature" in r.metrics})
    )
    return TranslationTable(pairs[0] if pairs else "?", order, cells, unmeasured, signatures)


def _title(table: TranslationTable, what: str) -> str:
    number = f"Table {table.number}. " if table.number else ""
    return f"{number}Machine Translation ({table.pair.upper()}): {what}"


def format_score_table(table: TranslationTable, *, title: str | None = None, digits: int = 2) -> str:
    """Table 4, 5 or 6: per pair the judge's s_T and s_Pr; last column mean s_Pr per proofreader, last row mean s_T."""
    return format_pair_table(
        table.players,
        table.cells,
        lambda c: (c.translator_score, c.proofreader_score),
        ("s_T", "s_Pr"),
        (table.proofreader_mean, table.translator_mean),
        corner="Proof \\ Trans",
        mean_labels=("mean s_Pr", "mean s_T"),
        caption="rows: proofreader, columns: translator",
        matches=lambda c: c.matches,
        title=_title(table, "judge scores") if title is None else title,
        digits=digits,
        column_mean_part=0,  # mean s_T under s_T
        difference=("s_T - s_Pr", lambda c: c.difference),
    )


def format_score_intervals(table: TranslationTable, *, digits: int = 2) -> str:
    """Every cell's s_T and s_Pr with their 95% intervals, and whether s_T - s_Pr is resolved."""
    return format_cell_intervals(
        table.players,
        table.cells,
        lambda c: (("s_T", c.translator_ci), ("s_Pr", c.proofreader_ci)),
        difference=("s_T - s_Pr", lambda c: c.difference),
        digits=digits,
    )


def format_metric_intervals(table: TranslationTable, metric: str = "chrf") -> str:
    """Every cell's T and Pr of ``metric`` with their 95% intervals, and whether the gain is resolved."""
    return format_cell_intervals(
        table.players,
        table.cells,
        lambda c: (("T", c.metrics[metric].translation_ci), ("Pr", c.metrics[metric].proofread_ci)),
        difference=("gain", lambda c: c.metrics[metric].gain_ci),
        title=f"95% intervals per cell ({_METRIC_NAMES.get(metric, metric)}; betting-eb/1, valid at any n of matches):",
    )


def format_metric_table(table: TranslationTable, metric: str = "chrf", *, title: str | None = None) -> str:
    """The grid of a reference metric: per pair T, Pr and gain; last row mean T, last columns mean Pr and gain."""
    name = _METRIC_NAMES.get(metric, metric)

    def get(cell: TranslationCell) -> MetricCell:
        return cell.metrics[metric]

    text = format_pair_table(
        table.players,
        table.cells,
        lambda c: (get(c).translation, get(c).proofread, get(c).gain),
        ("T", "Pr", "gain"),
        (
            lambda p: table.row_mean(p, lambda c: get(c).proofread),
            lambda p: table.column_mean(p, lambda c: get(c).translation),
        ),
        corner="Proof \\ Trans",
        mean_labels=("mean Pr", "mean T"),
        more_row_means=(("mean gain", lambda p: table.row_mean(p, lambda c: get(c).gain)),),
        caption=f"{name} of each paragraph against its reference, mean over the matches; T: translation, "
        "Pr: proofread, gain: Pr - T",
        matches=lambda c: c.matches,
        title=_title(table, f"{name} of the translation and the proofread text") if title is None else title,
        digits=2,
        column_mean_part=0,  # mean T under T
        difference=("gain", lambda c: get(c).gain_ci),
    )
    missing = table.unmeasured.get(metric, 0)
    if missing:
        text += f"\n({missing} match(es) without {name} left out)"
    return text


def format_corpus_bleu_table(table: TranslationTable, *, title: str | None = None) -> str:
    """The corpus-BLEU grid: per pair corpus BLEU of the translations (T), the proofread texts (Pr) and the gain;
    the last row each translator's corpus BLEU, the last columns each proofreader's and its gain (pooled corpora)."""
    text = format_pair_table(
        table.players,
        table.cells,
        lambda c: (lambda m: (m.translation, m.proofread, m.gain))(c.bleu.scores()),
        ("T", "Pr", "gain"),
        (lambda p: table.proofreader_bleu(p).proofread, lambda p: table.translator_bleu(p).translation),
        corner="Proof \\ Trans",
        mean_labels=("all Pr", "all T"),
        more_row_means=(("all gain", lambda p: table.proofreader_bleu(p).gain),),
        caption=f"{CORPUS_BLEU} (sacrebleu corpus_bleu) of the texts against their references, one score per cell "
        "over its paragraphs; all: the player's paragraphs in that role as one corpus, self-play left out",
        matches=lambda c: c.matches,
        title=_title(table, f"{CORPUS_BLEU} of the translation and the proofread text") if title is None else title,
        digits=2,
        column_mean_part=0,
    )
    if table.bleu_signatures:
        text += "\nsacrebleu signature: " + "; ".join(table.bleu_signatures)
    missing = table.unmeasured.get(CORPUS_BLEU, 0)
    if missing:
        text += f"\n({missing} match(es) without BLEU statistics left out: recorded before the scorer kept them)"
    return text


def judge_correlations(records: Iterable[MatchRecord], metric: str = "chrf") -> list[RoleCorrelation]:
    """Per role, the judge's score against ``metric`` per match (one direction's records).

    The translator's score against the metric of its translation; the proofreader's against the gain and
    against the metric of the proofread text.
    """
    name = _METRIC_NAMES.get(metric, metric)
    task = task_records(records, GAME)
    wanted = [
        ("translator", 0, f"{metric}_translation", f"{name} of the translation"),
        ("proofreader", 1, f"{metric}_gain", f"{name} gain (proofread - translation)"),
        ("proofreader", 1, f"{metric}_proofread", f"{name} of the proofread text"),
    ]
    out = []
    for role, index, key, measure in wanted:
        points = []
        for record in task:
            value = metric_value(record, key)
            if value is not None:
                points.append((value, float(record.returns[_seats(record)[index]])))
        out.append(
            RoleCorrelation(
                label=f"Judge {role} score vs {measure}",
                x_label=measure,
                y_label=f"judge's {role} score",
                points=tuple(points),
                correlation=correlate((y, x) for x, y in points),
            )
        )
    return out


def plot_translation_tables(table: TranslationTable, records: Iterable[MatchRecord], path: str | Path) -> Path:
    """Save a figure of one direction to ``path``: judge and chrF grids above, judge-vs-chrF scatter plots below.

    Uses matplotlib's Agg canvas directly (no pyplot, no global backend change). Returns the path written.
    """
    fig = agg_figure((17, 9.5))
    axes = fig.subplots(2, 3)

    def chrf(cell: TranslationCell) -> MetricCell:
        return cell.metrics["chrf"]

    panels: list[tuple[str, Callable[[TranslationCell], float], Callable[[TranslationCell], str], str]] = [
        (
            "Judge: s_T / s_Pr",
            lambda c: c.translator_score,
            lambda c: f"{c.translator_score:.2f} / {c.proofreader_score:.2f}",
            "s_T (judge)",
        ),
        (
            "chrF: translation / proofread",
            lambda c: chrf(c).translation,
            lambda c: f"{format_number(chrf(c).translation, 1)} / {format_number(chrf(c).proofread, 1)}",
            "chrF of the translation",
        ),
        (
            "chrF gain (proofread - translation)",
            lambda c: chrf(c).gain,
            lambda c: format_number(chrf(c).gain, 1),
            "gain",
        ),
    ]
    limits: list[tuple[float | None, float | None]] = [(1.0, 10.0), (0.0, 100.0), (None, None)]
    for ax, (title, value, text, label), scale in zip(axes[0], panels, limits, strict=True):
        pair_heatmap(
            fig,
            ax,
            table.players,
            table.cells,
            value,
            text,
            limits=scale,
            colorbar=label,
            axis_labels=("translator", "proofreader"),
            title=title,
            rotation=20,
            fontsize=7,
        )
    for ax, role in zip(axes[1], judge_correlations(records), strict=True):
        correlation_scatter(ax, role.points, role.correlation, labels=(role.x_label, role.y_label))
        ax.set_ylim(0.5, 10.5)
    fig.suptitle(_title(table, "judge scores and chrF"))
    return save_figure(fig, path)


def _figure_path(plot: str | Path, key: str, count: int) -> Path:
    path = Path(plot)
    if count == 1:
        return path
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in key)
    return path.with_name(f"{path.stem}-{safe}{path.suffix}")


def print_tables(
    records: Iterable[MatchRecord], *, players: Sequence[str] | None = None, plot: str | Path | None = None
) -> int:
    """Print Tables 4–6 with their chrF and BLEU grids and the judge–chrF correlations; ``plot`` saves figures.

    One table set per direction present (a figure each, named ``<plot stem>-<pair>`` when there are several).
    Returns 1 (and says so) when there are no translation records.
    """
    groups = translation_groups(records)
    if not groups:
        print(f"no {GAME} matches")
        return 1
    for key, group in groups.items():
        if players:  # the correlation and its plot cover the same players as the tables
            group = [r for r in group if set(r.seats) <= set(players)]
            if not group:
                print(f"{key}: no matches among {', '.join(players)}\n")
                continue
        table = translation_table(group, players)
        print(f"{game_variant(group[0].game)} ({len(group)} matches)\n")
        print(format_score_table(table))
        print(format_score_intervals(table))
        print()
        print(format_metric_table(table, "chrf"))
        print(format_metric_intervals(table, "chrf"))
        print()
        print(format_corpus_bleu_table(table))
        print()
        print(format_metric_table(table, "bleu"))
        print(format_metric_intervals(table, "bleu"))
        print()
        for role in judge_correlations(group):
            print(correlation_line(role.label, role.correlation))
        if plot:
            print(f"\nfigure: {plot_translation_tables(table, group, _figure_path(plot, key, len(groups)))}")
        print()
    return 0
