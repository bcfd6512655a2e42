"""What a run will cost before it starts (``run --dry-run``), and what it cost when it ends (the run summary).

**Dry run.** :func:`dry_run` plans the matches exactly as ``run`` does
(:func:`~deepeval_games.app.spec.schedule.plan_matches`,
the same ids, minus those the run directory already holds) and bounds, per model, the calls, tokens and cost without
sending anything. The bound per LLM seat of a match: every move of the game could be that seat's
(``max_game_length``), every move could need every re-ask (``1 + max_reasks`` calls), every reply could use its whole
cap (``max_tokens`` resolved against the task's reply limit, as the match id has it), and the prompt of the k-th call
holds at most the rules (:data:`RULES_TOKENS`) plus k times a turn (the reply cap and :data:`TURN_TOKENS` of
observation), capped by the model's context window where litellm knows it. Prices are those a player's settings give
(``input_cost_per_token``, ``output_cost_per_token``), else litellm's local price table
(:mod:`llm_bots.model_info`); a model with neither gets no cost (said so), and a spec with a budget and such a model
is refused, as ``run`` refuses it. An LLM judge adds ``1 + max_reasks`` calls per match.
Transport retries (429, 5xx) are not counted. Under ``until_stable`` the bound covers ``max_repeats``.

**Run summary.** :func:`run_summary` totals, per model, the tokens, cost and invalid-turn share of the matches a
run played; :func:`format_run_summary` adds the calls the run sent and its cache hits (asks answered from the
model-call cache instead of a call), as the run's model runtime counted them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.tables.usage import JUDGE_NAME, PlayerUsage, player_usage
from deepeval_games.app.spec.extends import with_pool
from deepeval_games.app.spec.manifest import check_budget_prices, given_price
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.app.spec.schedule import PlannedMatch, check_round_budget, plan_matches
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.spec.stopping import stopping_rule
from deepeval_games.app.storage.store import DB_NAME, Store
from deepeval_games.core import task
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord
from deepeval_games.core.registry.games import load_game
from llm_bots import model_info

__all__ = [
    "RULES_TOKENS",
    "TURN_TOKENS",
    "DryRun",
    "ModelEstimate",
    "dry_run",
    "format_dry_run",
    "format_run_summary",
    "run_summary",
]

RULES_TOKENS = 2000
"""Upper allowance for the rules and the first observation of a match, in tokens."""
TURN_TOKENS = 400
"""Upper allowance for what the referee says between two turns of a seat (observation, answer format), in tokens."""


@dataclass
class ModelEstimate:
    """The upper estimate for one model string."""

    model: str
    matches: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0
    """None when litellm has no price for the model."""
    plain_calls: int = 0
    """The same bound without re-asks (every turn answered at the first ask): a less pessimistic figure."""
    plain_tokens_in: int = 0
    plain_tokens_out: int = 0
    plain_cost_usd: float | None = 0.0


@dataclass
class DryRun:
    """What ``run`` would play and an upper estimate of what it would spend."""

    planned: int
    """Matches of the spec (``repeats``; ``max_repeats`` under ``until_stable``)."""
    to_play: int
    """Those the run directory does not hold yet: what ``run`` plays now."""
    models: list[ModelEstimate] = field(default_factory=list)

    @property
    def cost_usd(self) -> float | None:
        """The total upper cost; None when some model has no price."""
        costs = [m.cost_usd for m in self.models]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def _model_settings(player: PlayerSpec, game: object, seat: int) -> tuple[int, int, int | None]:
    """(reply cap, re-asks, context window) of a model player in a seat."""
    from llm_bots.model_config import JUDGE_DEFAULTS, effective_settings, resolve_max_tokens

    judge = seat == JUDGE_SEAT
    settings = effective_settings(player.params, JUDGE_DEFAULTS if judge else None)
    limit = None if judge else task.reply_limit(game, task.seat_roles(game)[seat])
    cap = resolve_max_tokens(settings.get("max_tokens"), limit)
    reasks = int(player.params.get("max_reasks", 2))
    given = player.params.get("context_tokens")
    window = model_info.context_window(player.model or "", given if isinstance(given, int) else None)
    return cap, reasks, window


def _price(model: str, tokens_in: int, tokens_out: int, given: tuple[float, float] | None = None) -> float | None:
    """The cost in USD at the price the player's settings give (``given``), else as litellm's price table gives it
    (:func:`llm_bots.model_info.cost`); None for a model with no price (or one litellm lists at 0, as it does for
    some models whose price it does not know)."""
    return model_info.cost(model, tokens_in, tokens_out, given)


def _seat_bound(turns: int, cap: int, reasks: int, window: int | None) -> tuple[int, int, int]:
    """(calls, tokens in, tokens out) of one LLM seat over at most ``turns`` turns."""
    calls = turns * (1 + reasks)
    tokens_in = 0
    for k in range(1, calls + 1):
        prompt = RULES_TOKENS + k * (cap + TURN_TOKENS)
        tokens_in += min(prompt, window) if window else prompt
    return calls, tokens_in, calls * cap


_Bounds = tuple[str, tuple[int, int, int], tuple[int, int, int], "tuple[float, float] | None"]


def _match_bounds(spec: ExperimentSpec, planned: PlannedMatch, games: dict[str, object]) -> list[_Bounds]:
    """Per model seat of one planned match: the model, its (calls, tokens in, tokens out) bounds with and without
    re-asks, and the price per token the player's settings give (None: litellm's price table prices it)."""
    game = games.setdefault(planned.game, load_game(planned.game))
    turns = int(game.max_game_length())  # type: ignore[attr-defined]
    seats: list[tuple[PlayerSpec, int]] = [(spec.player(name), seat) for seat, name in enumerate(planned.seats)]
    if spec.judge is not None and spec.judge.model is not None:
        seats.append((spec.judge, JUDGE_SEAT))
    bounds = []
    for player, seat in seats:
        if player.model is None:
            continue
        cap, reasks, window = _model_settings(player, game, seat)
        moves = 1 if seat == JUDGE_SEAT else turns
        bounds.append(
            (
                player.model,
                _seat_bound(moves, cap, reasks, window),
                _seat_bound(moves, cap, 0, window),
                given_price(player.params),
            )
        )
    return bounds


def dry_run(spec: ExperimentSpec, out_dir: str | Path | None = None) -> DryRun:
    """Plan ``spec`` as ``run`` would (skipping what ``out_dir`` holds) and bound its calls, tokens and cost.

    Under the adaptive stopping rule with a match budget, at most that many matches are played: the bound counts
    the costliest ones (by calls) among those ``max_repeats`` rounds would hold.

    Raises:
        SpecError: a match budget below one round (:func:`~deepeval_games.app.spec.schedule.check_round_budget`), a
            budget with a model that has no price (:func:`~deepeval_games.app.spec.manifest.check_budget_prices`), or a
            plan that cannot be made (as ``run`` would).
    """
    spec = with_pool(spec)  # as run does: the pool's players are named by the plan's seats
    rule = stopping_rule(spec)
    check_round_budget(spec, rule)  # as run would refuse it
    check_budget_prices(spec)  # the same: a budget cannot count a model with no price
    if rule is not None:
        spec = spec.with_experiment(repeats=max(spec.repeats, rule.max_repeats))
    plan = plan_matches(spec)
    done: set[str] = set()
    if out_dir is not None and (Path(out_dir) / DB_NAME).exists():
        with Store(out_dir, read_only=True) as store:
            done = store.completed_ids()
    todo = plan.without(done)
    games: dict[str, object] = {}
    per_match = [_match_bounds(spec, planned, games) for planned in todo]
    if rule is not None and rule.rule == "adaptive" and rule.budget_matches is not None:
        left = max(0, rule.budget_matches - len(done))
        per_match = sorted(per_match, key=lambda seats: -sum(b[1][0] for b in seats))[:left]
        todo = todo[:left]
    estimates: dict[str, ModelEstimate] = {}
    tokens: dict[tuple[str, tuple[float, float] | None], list[int]] = {}  # per model and price: the four sums
    for seats in per_match:
        for model, (calls, tokens_in, tokens_out), (plain_calls, plain_in, plain_out), given in seats:
            estimate = estimates.setdefault(model, ModelEstimate(model))
            estimate.matches += 1
            estimate.calls += calls
            estimate.tokens_in += tokens_in
            estimate.tokens_out += tokens_out
            estimate.plain_calls += plain_calls
            estimate.plain_tokens_in += plain_in
            estimate.plain_tokens_out += plain_out
            sums = tokens.setdefault((model, given), [0, 0, 0, 0])
            for i, value in enumerate((tokens_in, tokens_out, plain_in, plain_out)):
                sums[i] += value
    for (model, given), (tokens_in, tokens_out, plain_in, plain_out) in tokens.items():
        estimate = estimates[model]
        estimate.cost_usd = _add(estimate.cost_usd, _price(model, tokens_in, tokens_out, given))
        estimate.plain_cost_usd = _add(estimate.plain_cost_usd, _price(model, plain_in, plain_out, given))
    return DryRun(planned=len(plan), to_play=len(todo), models=sorted(estimates.values(), key=lambda e: e.model))


def _add(total: float | None, cost: float | None) -> float | None:
    """A model's cost so far plus one more part of it; None once a part has no price."""
    return None if total is None or cost is None else total + cost


def _usd(value: float | None) -> str:
    return "price unknown" if value is None else f"${value:,.2f}"


def format_dry_run(result: DryRun, spec: ExperimentSpec, *, before_play: bool = False) -> str:
    """The dry run as text: the match count first, then one line per model. ``before_play``: the same bound printed
    as the first lines of a run that is about to play (``eval``), so it says what is about to happen."""
    rule = stopping_rule(spec)
    budgeted = rule is not None and rule.rule == "adaptive" and rule.budget_matches is not None
    if before_play:
        count = f"at most {result.to_play}" if budgeted else f"{result.to_play}"
        lines = [f"About to play {count} matches; the bounds below are what they can cost at the most."]
    else:
        lines = [f"Dry run: {result.to_play} matches to play ({result.planned} planned); nothing was sent."]
    if rule is not None and budgeted:
        lines.append(f"  (the stopping rule plays at most {rule.budget_matches} matches in all)")
    elif rule is not None:
        lines.append(f"  (counted up to the most repeats the stopping rule may play: {rule.max_repeats})")
    if not result.models:
        lines.append("  No model players: no calls, no tokens, no cost.")
        return "\n".join(lines)
    lines.append("Upper estimate per model (every turn re-asked to the limit, every reply at its cap):")
    for m in result.models:
        local = model_info.is_local(m.model)
        cost = "local model: no price" if local else f"<= {_usd(m.cost_usd)}"
        plain = "" if local else f", <= {_usd(m.plain_cost_usd)}"
        lines.append(
            f"  {m.model}: {m.matches} seats, <= {m.calls:,} calls, <= {m.tokens_in:,} tokens in, "
            f"<= {m.tokens_out:,} tokens out, {cost}; without re-asks <= {m.plain_calls:,} calls{plain}"
        )
    hosted = [m for m in result.models if not model_info.is_local(m.model)]
    if not hosted:
        return "\n".join(lines)
    priced = [m.cost_usd for m in hosted if m.cost_usd is not None]
    unpriced = [m.model for m in hosted if m.cost_usd is None]
    total = f"  total: <= {_usd(sum(priced))}" + (
        f" for the priced models; no price for {', '.join(unpriced)} (give one: input_cost_per_token and "
        "output_cost_per_token)"
        if unpriced
        else ""
    )
    lines.append(total + " (litellm's price table or the price a player gives; transport retries not counted)")
    return "\n".join(lines)


def run_summary(
    records: Iterable[MatchRecord], players: Sequence[PlayerSpec], judge: PlayerSpec | None = None
) -> list[PlayerUsage]:
    """Per configured model string (:attr:`PlayerUsage.player`), the usage of the players that model plays (the
    judge's calls count for the judge's model), as :func:`analysis.tables.usage.player_usage` counts it: a stand-in for
    a
    prompt that fit no context is not the model's invalid move."""
    model_of = {p.name: p.model for p in players if p.model is not None}
    if judge is not None and judge.model is not None:
        model_of[JUDGE_NAME] = judge.model
    totals: dict[str, PlayerUsage] = {}
    for name, usage in player_usage(records).items():
        model = model_of.get(name)
        if model is not None:
            totals.setdefault(model, PlayerUsage(model)).add(usage)
    return sorted(totals.values(), key=lambda t: t.player)


def cache_saving(model: str, cached_tokens: int) -> float | None:
    """What reading ``cached_tokens`` prompt tokens from the provider's cache saved against the full input price
    (litellm's ``input_cost_per_token`` less its ``cache_read_input_token_cost``); None where either is unknown."""
    price, cached = model_info.list_price(model), model_info.cache_read_price(model)
    if price is None or not price[0] or cached is None:
        return None
    return cached_tokens * (price[0] - cached)


def _cached_part(t: PlayerUsage) -> str:
    """``" (N cached, S%)"``: the prompt tokens read from the provider's cache; "" when none were reported."""
    if not t.cached_tokens:
        return ""
    writes = f", {t.cache_write_tokens:,} written" if t.cache_write_tokens else ""
    return f" ({t.cached_tokens:,} cached, {100 * t.cached_tokens / max(1, t.tokens_in):.1f}%{writes})"


def _cost_part(t: PlayerUsage) -> str:
    """The cost, and where tokens came from the provider's cache what pricing them at the cached rate saved; a local
    model has no price."""
    if model_info.is_local(t.player):
        return "local model: no price"
    if not t.cached_tokens:
        return f"${t.cost_usd:.4f}"
    saved = cache_saving(t.player, t.cached_tokens)
    rate = "cached tokens at the cached rate" + (f", ${saved:.4f} saved" if saved is not None else ", rate unknown")
    return f"${t.cost_usd:.4f} ({rate})"


def format_run_summary(totals: Sequence[PlayerUsage], sent: Mapping[str, int], cache_hits: Mapping[str, int]) -> str:
    """One line per model: replies, tokens (the share the provider's prompt cache served), cost (those tokens at
    the cached rate), invalid-turn share, calls sent and cache hits."""
    if not totals:
        return "Run summary: no model calls (scripted players only)."
    lines = ["Run summary (matches played now):"]
    for t in totals:
        asked = t.turns - t.stand_ins
        stand_ins = f", {t.stand_ins} stand-ins (no prompt fit)" if t.stand_ins else ""
        lines.append(
            f"  {t.player}: {sent.get(t.player, 0)} calls, {cache_hits.get(t.player, 0)} cache hits, "
            f"{t.tokens_in:,} tokens in{_cached_part(t)}, {t.tokens_out:,} tokens out, {_cost_part(t)}, "
            f"invalid turns {f'{100 * t.invalid_share:.1f}%' if asked else '-'} ({t.invalid} of {asked}){stand_ins}"
        )
    return "\n".join(lines)
