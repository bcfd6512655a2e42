"""A budget holds only where every model it counts has a price (issue 50, item 5).

A model litellm cannot price (a typo, a name newer than its price table) costs 0.0 a call, so a budget would never
stop it: such a run is refused before any model call, with the closest priced names and the settings that give a
price (``input_cost_per_token``, ``output_cost_per_token``); given, that price is what each call is charged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.rejudge import judge_source
from deepeval_games.app.spec.manifest import unpriced_models
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.core.errors import UnpricedModelError
from llm_bots import model_info
from llm_bots.model_config import ModelConfig, ModelConfigError, effective_settings
from tests.conftest import PGG_SCRIPTED_PLAYERS
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, first_legal_move

TYPO = "openai/gpt-4o-mni"
"""A model litellm has no price for: ``openai/gpt-4o-mini`` mistyped."""


def _eval(server: FakeOpenAIServer, out: Path, key: str, model: str, *extra: str) -> list[str]:
    return [
        "eval",
        "deepeval_public_goods",
        "--model",
        model,
        *("-M", f'api_base="{server.api_base}"', "-M", f'api_key_env="{key}"'),
        *("-M", "max_retries=0", "-M", "timeout_s=5"),
        *("--out", str(out), "--no-progress", "--workers", "1", *extra),
    ]


def _refusal(err: str) -> None:
    """The refusal names the model, a close priced name and the settings that give a price."""
    assert TYPO in err and "litellm has no price" in err and "Nothing was sent" in err
    assert "closest priced names: openai/gpt-4o-mini" in err
    assert "input_cost_per_token" in err and "output_cost_per_token" in err


def test_a_budget_with_an_unpriced_model_is_refused_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        assert main(_eval(server, tmp_path / "run", fake_provider_key, TYPO, "--budget", "2")) == 2
        assert server.request_count == 0
    err = capsys.readouterr().err
    _refusal(err)
    assert "-M input_cost_per_token=" in err  # how eval gives it
    assert not (tmp_path / "run").exists()


def test_without_a_budget_an_unpriced_model_still_plays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        argv = _eval(server, tmp_path / "run", fake_provider_key, TYPO, "--max-matches", "4")
        assert main(argv) == 0
        assert server.request_count > 0
    out = capsys.readouterr().out
    assert f"no price for {TYPO}" in out  # the estimate says it, and how to give one
    assert "input_cost_per_token" in out


def test_a_given_price_is_charged_and_the_budget_stops_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    price = ("-M", "input_cost_per_token=0.01", "-M", "output_cost_per_token=0.02")
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        # each call: 11 prompt tokens and a few reply tokens, at least $0.11; a budget of $0.5 allows a handful
        argv = _eval(server, tmp_path / "run", fake_provider_key, TYPO, *price, "--budget", "0.5")
        assert main(argv) == 2
        sent = server.request_count
    captured = capsys.readouterr()
    assert "budget of 0.5000 USD is spent" in captured.err
    assert 1 <= sent <= 5  # stopped: the run would have made many more calls
    assert "price unknown" not in captured.out and "no price for" not in captured.out  # the estimate priced it


def test_a_given_price_is_what_each_call_costs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    price = ("-M", "input_cost_per_token=0.001", "-M", "output_cost_per_token=0.002")
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        argv = _eval(server, tmp_path / "run", fake_provider_key, TYPO, *price, "--budget", "100", "--max-matches", "4")
        assert main(argv) == 0
        assert server.request_count > 0
    out = capsys.readouterr().out
    [usage] = [line for line in out.splitlines() if line.startswith(f"  {TYPO}: ") and "cache hits" in line]
    tokens_in = int(usage.split(" tokens in")[0].rsplit(", ", 1)[1].replace(",", ""))
    tokens_out = int(usage.split(" tokens out")[0].rsplit(", ", 1)[1].replace(",", ""))
    cost = float(usage.split("$", 1)[1].split(",", 1)[0])
    assert cost == pytest.approx(0.001 * tokens_in + 0.002 * tokens_out, abs=1e-4) and cost > 0


def test_a_priced_model_with_a_budget_plays_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        argv = _eval(server, tmp_path / "run", fake_provider_key, "openai/gpt-4o-mini", "--budget", "2")
        assert main([*argv, "--max-matches", "4"]) == 0
        assert server.request_count > 0
    out = capsys.readouterr().out
    assert "no price" not in out
    [usage] = [line for line in out.splitlines() if line.startswith("  openai/gpt-4o-mini: ") and "cache hits" in line]
    assert "$0.0000," not in usage  # litellm's price counted


def _spec(tmp_path: Path, server: FakeOpenAIServer, *, budget: float | None, **settings: float) -> Path:
    table = "".join(f"{key} = {value}\n" for key, value in settings.items())
    budget_line = f"budget_usd = {budget}\n" if budget is not None else ""
    text = (
        '[experiment]\nname = "priced"\ngame = "deepeval_public_goods(players=4,rounds=2)"\nrepeats = 1\n'
        f"{budget_line}cache = false\n\n"
        f'[[players]]\nname = "typo"\nmodel = "{TYPO}"\napi_base = "{server.api_base}"\n'
        f'api_key_env = "FAKE_PROVIDER_KEY"\nmax_retries = 0\ntimeout_s = 5\n{table}' + PGG_SCRIPTED_PLAYERS
    )
    path = tmp_path / "spec.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_spec_with_a_budget_and_an_unpriced_model_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        spec = _spec(tmp_path, server, budget=2.0)
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
        _refusal(capsys.readouterr().err)
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--dry-run"]) == 2  # the estimate too
        _refusal(capsys.readouterr().err)
        assert server.request_count == 0
        assert not (tmp_path / "run").exists()
        # the spec's own keys give the price: the run plays
        priced = _spec(tmp_path, server, budget=2.0, input_cost_per_token=1e-6, output_cost_per_token=2e-6)
        assert main(["run", str(priced), "--out", str(tmp_path / "run"), "--no-progress", "--workers", "1"]) == 0
        assert server.request_count > 0


def test_a_rejudging_budget_with_an_unpriced_judge_is_refused() -> None:
    with pytest.raises(UnpricedModelError, match="closest priced names: openai/gpt-4o-mini"):
        judge_source(TYPO, {}, budget_usd=1.0)
    judge_source(TYPO, {})  # no budget: no price needed
    judge_source(TYPO, {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}, budget_usd=1.0)


def test_local_models_and_scripted_bots_need_no_price() -> None:
    players = [
        PlayerSpec(name="local", model="local/smollm2"),
        PlayerSpec(name="bot", bot="random"),
        PlayerSpec(name="priced", model="openai/gpt-4o-mini"),
        PlayerSpec(name="free", model=TYPO, params={"input_cost_per_token": 0, "output_cost_per_token": 0}),
        PlayerSpec(name="typo", model=TYPO),
    ]
    assert unpriced_models([*players, None]) == [TYPO]


def test_the_model_facade_knows_prices_and_close_names() -> None:
    assert model_info.list_price(TYPO) is None and model_info.needs_price(TYPO)
    assert model_info.list_price("openai/gpt-4o-mini") is not None
    assert not model_info.needs_price("local/smollm2") and not model_info.needs_price(TYPO, (0.0, 0.0))
    assert model_info.closest_priced(TYPO)[0] == "openai/gpt-4o-mini"
    assert model_info.closest_priced("gpt-4o-mni")[0] == "gpt-4o-mini"
    assert model_info.cost(TYPO, 100, 10, (0.01, 0.02)) == pytest.approx(1.2)
    assert model_info.cost(TYPO, 100, 10) is None


def test_a_price_is_both_settings_and_no_part_of_a_match_id() -> None:
    with pytest.raises(ModelConfigError, match="set together"):
        ModelConfig(TYPO, input_cost_per_token=1e-6)
    config = ModelConfig.from_mapping({"model": TYPO, "input_cost_per_token": 0, "output_cost_per_token": 2e-6})
    assert config.given_price == (0.0, 2e-6)
    with_price = effective_settings({"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6})
    assert json.dumps(with_price, sort_keys=True) == json.dumps(effective_settings({}), sort_keys=True)


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize(
    "spec",
    [p for p in sorted(EXAMPLES.glob("**/*.toml")) if "[experiment]" in p.read_text(encoding="utf-8")],
    ids=lambda p: str(p.relative_to(EXAMPLES)),
)
def test_every_example_with_a_budget_prices_every_model(spec: Path) -> None:
    from deepeval_games.app.spec.loading import load_spec

    loaded = load_spec(spec)
    if loaded.budget_usd is not None:
        assert unpriced_models([*loaded.players, loaded.judge]) == []
