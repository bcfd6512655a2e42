"""The experiment spec as pydantic models: same hashes as before, clear errors, a JSON Schema, a Python API."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import typing
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.spec.loading import load_spec
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.app.spec.spec import ExperimentSpec, parse_spec, spec_json_schema
from deepeval_games.core.errors import SpecError
from llm_bots.model_config import BOT_SETTING_KEYS, ModelConfig, ModelSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(
    path
    for path in (ROOT / "examples").rglob("*.toml")
    if "[experiment]" in path.read_text(encoding="utf-8")  # specs (not a package's pyproject or prompt file)
)

# Computed with the dataclass spec (commit 1892e66), before the spec became pydantic models: a change here
# renames every match id and makes existing run directories refuse to resume.
PINNED_HASHES = {
    "pgg_scripted": "dda00a00a78f043d",
    "models_and_judge": "61eaea9aebc236de",
    "games": "6cd84565ef18c2cb",
}
PINNED_PGG_IDS = ("1dbff82e4d0f3056f8d4", "bd359940863f5ae3")  # first match id; digest of all 20 (PGG v2: goal)
DOCS: dict[str, dict[str, Any]] = {
    "models_and_judge": {
        "experiment": {
            "name": "t",
            "game": "deepeval_public_goods(players=2)",
            "repeats": 3,
            "seed": 5,
            "cache": False,
            "budget_usd": 2,
            "max_concurrency": 2,
            "until_stable": {"epsilon": 1},
            "sweep": {"alpha": [1.2, 2], "rounds": {"from": 1, "to": 3}},
        },
        "players": [
            {
                "name": "m",
                "model": "openai/x",
                "temperature": 1,
                "timeout_s": 10,
                "max_reasks": 1,
                "accept_model_ids": ["a"],
                "api_key_env": "K",
            },
            {"name": "b", "bot": "pgg_free_rider"},
        ],
        "judge": {"model": "openai/j", "allow_player_model": True, "temperature": 0},
    },
    "games": {
        "experiment": {
            "games": ["deepeval_public_goods(players=2)", "deepeval_public_goods(players=3)"],
            "pairing": "round_robin",
        },
        "players": [{"name": "b", "bot": "pgg_free_rider", "params": {"x": 1}}, {"name": "c", "bot": "pgg_random"}],
        "judge": {"bot": "judge_fixed", "name": "J"},
    },
}
PGG: dict[str, Any] = {
    "experiment": {"name": "dict-spec", "game": "deepeval_public_goods(players=2,rounds=2)", "repeats": 2},
    "players": [{"name": "free", "bot": "pgg_free_rider"}, {"name": "full", "bot": "pgg_full_contributor"}],
}


# -- identity: the same document gives the same hash and match ids as before ------------------------------


def test_the_hash_of_the_pgg_example_is_unchanged() -> None:
    spec = load_spec(ROOT / "examples" / "pgg_scripted.toml")
    assert spec.content_hash() == PINNED_HASHES["pgg_scripted"]
    ids = [m.match_id for m in plan_matches(spec)]
    assert (ids[0], hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:16]) == PINNED_PGG_IDS


@pytest.mark.parametrize("name", sorted(DOCS))
def test_hashes_of_models_judges_sweeps_are_unchanged(name: str) -> None:
    assert parse_spec(DOCS[name]).content_hash() == PINNED_HASHES[name]


def test_model_settings_are_kept_as_written() -> None:
    spec = parse_spec(DOCS["models_and_judge"])
    player = spec.player("m")
    assert player.kind == "model" and player.model == "openai/x" and player.bot is None
    assert player.params["temperature"] == 1 and type(player.params["temperature"]) is int  # not 1.0
    assert player.identity() == {
        "name": "m",
        "bot": None,
        "model": "openai/x",
        "params": {"temperature": 1, "max_reasks": 1},  # delivery settings left out
    }
    assert spec.judge is not None and spec.judge.name == "judge" and spec.judge.params["allow_player_model"] is True
    assert spec.sweep == {"alpha": (1.2, 2), "rounds": (1, 2, 3)}
    rule = spec.experiment.until_stable
    assert rule is not None and rule.epsilon == 1.0 and rule.batch == 5
    assert spec.cache is False and spec.budget_usd == 2.0 and spec.repeats == 3 and spec.seed == 5
    assert spec.uses_models() and spec.games == ("deepeval_public_goods(players=2)",)


def test_source_is_the_document_and_revalidates_to_the_same_spec() -> None:
    spec = parse_spec(DOCS["games"])
    assert spec.source == json.loads(json.dumps(DOCS["games"]))
    again = ExperimentSpec.model_validate(spec.source)
    assert again == spec and again.content_hash() == spec.content_hash()
    dumped = spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert parse_spec(dumped).content_hash() == spec.content_hash()
    assert spec.player("b").to_table() == DOCS["games"]["players"][0]


def test_with_experiment_changes_repeats_not_the_hash() -> None:
    spec = parse_spec(DOCS["models_and_judge"])
    more = spec.with_experiment(repeats=40)
    assert more.repeats == 40 and spec.repeats == 3 and more.content_hash() == spec.content_hash()
    with pytest.raises(SpecError, match="'repeats' must be >= 1"):
        spec.with_experiment(repeats=0)


def test_players_made_in_python() -> None:
    player = PlayerSpec(name="p", model="openai/x", params={"temperature": 0.5, "timeout_s": 3})
    assert player.kind == "model" and player.identity()["params"] == {"temperature": 0.5}
    assert PlayerSpec(name="b", bot="pgg_random").kind == "bot"
    spec = ExperimentSpec(
        experiment={"game": "deepeval_public_goods(players=2)"}, players=[player, {"name": "b", "bot": "x"}]
    )
    assert spec.players[0] is player and spec.source["players"][0] == player.to_table()
    assert spec.content_hash() == parse_spec(spec.source).content_hash()


# -- errors ---------------------------------------------------------------------------------------------------


def _doc(**experiment: Any) -> dict[str, Any]:
    return {
        "experiment": {"game": "deepeval_public_goods(players=2)", **experiment},
        "players": [dict(p) for p in PGG["players"]],
    }


def _with_player(**entry: Any) -> dict[str, Any]:
    data = _doc()
    data["players"].append(entry)
    return data


@pytest.mark.parametrize(
    "data, message",
    [
        (
            _doc(repeat=3),
            "[experiment]: unknown key 'repeat' (did you mean 'repeats'?); known keys: budget_usd, cache, data_dir,",
        ),
        (_doc(repeats="3"), "[experiment]: 'repeats' must be an integer, got '3'"),
        (_doc(repeats=True), "[experiment]: 'repeats' must be an integer, got True"),
        (_doc(seed=-1), "[experiment]: 'seed' must be >= 0, got -1"),
        (_doc(pairing="pairs"), "[experiment]: 'pairing' must be one of 'auto', 'permute'"),
        (_doc(cache=3), "[experiment]: 'cache' must be true/false or a path, got 3"),
        (_doc(games=["x"]), "give exactly one of 'game' (a game string) or 'games'"),
        (_doc(until_stable={"epsilon": 1, "steps": 2}), "[experiment.until_stable]: unknown key 'steps'"),
        (_doc(until_stable={"step": 2}), "[experiment.until_stable]: 'epsilon' is required"),
        (_doc(sweep={"alpha": {"from": 3, "to": 1}}), "[experiment.sweep] 'alpha': no values"),
        ({**_doc(), "judges": {}}, "unknown top-level table(s) ['judges']"),
        ({"players": PGG["players"]}, "the spec needs an [experiment] table"),
        ({"experiment": PGG["experiment"], "players": []}, "the spec needs at least one [[players]] entry"),
        (_with_player(name="x", bot="pgg_random", temperature=1), "[[players]] 'x': unknown key 'temperature'"),
        (_with_player(name="x", bot="a", model="b"), "[[players]] 'x': give exactly one of 'bot'"),
        (
            _with_player(name="x", model="openai/x", temprature=0.5),
            "[[players]] 'x': unknown key 'temprature' (did you mean 'temperature'?)",
        ),
        (_with_player(name="x", model="openai/x", seed="7"), "[[players]] 'x': 'seed' must be an integer, got '7'"),
        (_with_player(name="x", model="openai/x", temperature=3), "[[players]] 'x': 'temperature' must be <= 2"),
        (_with_player(name="x", model="openai/x", prompt_style="x"), "'prompt_style' must be one of 'chat'"),
        (_with_player(name="x", model="openai/x", api_key_env="sk-1"), "'api_key_env' must be the NAME of an"),
        (_with_player(name="x", model=" "), "'model' must be a litellm model string like 'openai/gpt-4o'"),
        (_with_player(name="x", bot="a", params=3), "[[players]] 'x': 'params' must be a table, got 3"),
        (_with_player(bot="a"), "[[players]] #3: 'name' is required"),
        (_with_player(name="free", bot="a"), "[[players]]: names must be unique; repeated: ['free']"),
        ({**_doc(), "judge": {"bot": "judge_fixed", "allow_player_model": True}}, "[judge]: unknown key"),
        ({**_doc(), "judge": {"model": "openai/j", "allow_player_model": "yes"}}, "'allow_player_model' must be true"),
    ],
)
def test_errors_name_the_table_and_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    assert message in str(info.value)
    assert "pydantic" not in str(info.value) and "errors.pydantic.dev" not in str(info.value)


def test_every_problem_is_listed() -> None:
    data = _with_player(name="x", model="openai/x", temprature=0.5)
    data["experiment"]["seed"] = -1
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    lines = str(info.value).splitlines()
    assert len(lines) == 2 and lines[0].startswith("[experiment]") and lines[1].startswith("[[players]] 'x'")


# -- model settings: one documentation, the same rules as ModelConfig and BotSettings ----------------------


def test_model_settings_match_model_config_and_bot_settings() -> None:
    from llm_bots.llm_bot import PROMPT_STYLES, BotSettings

    config_keys = set(ModelConfig.field_names()) - {"model"}
    assert set(ModelSettings.model_fields) == config_keys | set(BOT_SETTING_KEYS)
    for f in dataclasses.fields(ModelConfig):
        if f.name != "model":
            default: Any = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            expected = ModelSettings.model_fields[f.name].get_default(call_default_factory=True)
            assert list(default) == expected if f.name == "accept_model_ids" else default == expected, f.name
    for f in dataclasses.fields(BotSettings):
        assert ModelSettings.model_fields[f.name].default == f.default
    assert set(typing.get_args(ModelSettings.model_fields["prompt_style"].annotation)) == set(PROMPT_STYLES)
    assert all(field.description for field in ModelSettings.model_fields.values())


def test_the_judge_key_matches_the_judge() -> None:
    from deepeval_games.app.spec.players import ALLOW_PLAYER_MODEL as SPEC_KEY
    from llm_bots.judge import ALLOW_PLAYER_MODEL

    assert SPEC_KEY == ALLOW_PLAYER_MODEL


def test_model_config_imports_nothing_of_the_application() -> None:
    source = (ROOT / "llm_bots" / "model_config.py").read_text(encoding="utf-8")
    for module in ("spec", "runner", "cli", "schedule", "store"):
        assert f"deepeval_games.{module}" not in source


# -- the JSON Schema -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = spec_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_command_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == json.loads(json.dumps(spec_json_schema()))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    model = schema["$defs"]["ModelPlayer"]["properties"]
    assert "max_reasks" in model and "temperature" in model and model["timeout_s"]["description"]
    assert main(["schema", "--record"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert "prompts" in record["$defs"]["TurnRecord"]["properties"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_schema_accepts_every_example(validator: jsonschema.Draft202012Validator, path: Path) -> None:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert [e.message for e in validator.iter_errors(data)] == []
    load_spec(path)  # and the models agree


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["experiment"].update(repeat=3),
        lambda d: d.update(extra={}),
        lambda d: d["players"].append({"name": "x", "bot": "a", "model": "b"}),
        lambda d: d["players"].append({"name": "x", "model": "openai/x", "temprature": 0.5}),
        lambda d: d["players"].append({"name": "x", "bot": "a", "temperature": 0.5}),
        lambda d: d["experiment"].update(games=["a"]),
        lambda d: d["experiment"].update(pairing="pairs"),
    ],
)
def test_schema_rejects_what_parse_spec_rejects(validator: jsonschema.Draft202012Validator, change: Any) -> None:
    data = json.loads(json.dumps(PGG))
    change(data)
    assert list(validator.iter_errors(data))
    with pytest.raises(SpecError):
        parse_spec(data)


# -- the Python API ------------------------------------------------------------------------------------------


def test_run_experiment_takes_a_dict_a_model_or_a_path(tmp_path: Path) -> None:
    from_dict = run_experiment(PGG, tmp_path / "dict")
    assert from_dict.played == 2 and not from_dict.failed
    assert {r.experiment for r in from_dict.records} == {"dict-spec"}
    from_model = run_experiment(parse_spec(PGG), tmp_path / "dict")  # the same spec: resumes, plays nothing
    assert from_model.played == 0 and from_model.skipped == 2
    toml = tmp_path / "spec.toml"
    toml.write_text(
        '[experiment]\nname = "dict-spec"\ngame = "deepeval_public_goods(players=2,rounds=2)"\nrepeats = 2\n'
        '[[players]]\nname = "free"\nbot = "pgg_free_rider"\n'
        '[[players]]\nname = "full"\nbot = "pgg_full_contributor"\n',
        encoding="utf-8",
    )
    from_path = run_experiment(toml, tmp_path / "toml")
    assert [r.canonical() for r in from_path.records] == [r.canonical() for r in from_dict.records]
    with pytest.raises(SpecError, match="unknown key 'repeat'"):
        run_experiment({**PGG, "experiment": {**PGG["experiment"], "repeat": 1}}, tmp_path / "bad")
