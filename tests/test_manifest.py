"""Every run directory holds its manifest: versions, prompt and data hashes, models and what providers reported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.spec.manifest import MANIFEST_NAME, read_manifest
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.infra.files import data_sources
from game_defs.data_files import EXPECTED_SHA256
from game_defs.idiom_solitaire.dictionary import IdiomDictionary
from tests.fake_openai_server import FAKE_FINGERPRINT, Behaviour, FakeOpenAIServer, model_player

ROOT = Path(__file__).resolve().parents[1]
MT_GAME = "deepeval_translation(pair=en-zh,paragraph=2455-p2,words=40)"


def _mt_spec(**experiment: object) -> dict[str, object]:
    return {
        "experiment": {"name": "mt-manifest", "game": MT_GAME, "pairing": "round_robin", **experiment},
        "players": [
            {"name": "ref", "bot": "mt_reference_translator"},
            {"name": "copy", "bot": "mt_copy_source_translator"},
        ],
        "judge": {"bot": "judge_chrf"},
    }


def test_a_scripted_run_records_versions_data_hashes_and_each_resumption(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = run_experiment(_mt_spec(), run)
    manifest = json.loads((run / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert manifest["manifest_version"] == 1 and len(manifest["runs"]) == 1
    entry = manifest["runs"][0]
    assert entry["status"] == "finished" and entry["experiment"] == "mt-manifest"
    assert entry["planned"] == 2 and entry["played"] == first.played == 2 and entry["failed"] == 0
    assert entry["spec_hash"] == parse_spec(_mt_spec()).content_hash()
    assert entry["games"] == ["deepeval_translation(pair=en-zh,paragraph=2455-p2,split=tst2017,words=40)"]
    packages = entry["packages"]
    assert {"deepeval-games", "open_spiel", "litellm", "sacrebleu", "python"} <= set(packages)
    for name in ("iwslt2017/en-zh.tgz", "iwslt2017/zh-en.tgz"):  # what the game read, with its checksum
        data = entry["data"][name]
        assert data["sha256"] == EXPECTED_SHA256[name] == hashlib.sha256(Path(data["path"]).read_bytes()).hexdigest()
    assert entry["prompts"] == {} and entry["models"] == []  # no model played

    run_experiment(_mt_spec(), run)  # resumed: nothing to play, a second entry
    runs = read_manifest(run)["runs"]
    assert len(runs) == 2 and runs[1]["played"] == 0 and runs[1]["status"] == "finished"
    assert runs[0] == entry  # the first is kept as it was


def _model_spec(server: FakeOpenAIServer, cache: str | bool) -> dict[str, Any]:
    """One round of two-seat PGG: the fake provider's model against a free rider."""
    server.default = Behaviour.reply("3", model_id="fake-gpt-2024-08-06")
    game = "deepeval_public_goods(players=2,rounds=1)"
    return {
        "experiment": {"name": "pgg-manifest", "game": game, "cache": cache},
        "players": [model_player("fake-gpt", server), {"name": "free", "bot": "pgg_free_rider"}],
    }


def test_a_model_run_records_prompt_hashes_settings_and_what_the_provider_reported(
    tmp_path: Path, fake_provider_key: str
) -> None:
    with FakeOpenAIServer(max_hang_s=5) as server:
        result = run_experiment(_model_spec(server, cache=False), tmp_path / "run")
    assert not result.failed
    entry = read_manifest(tmp_path / "run")["runs"][0]
    prompts = entry["prompts"]
    path = ROOT / "llm_bots" / "public_goods" / "prompts.toml"
    assert prompts["public_goods"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert prompts["public_goods"]["version"].startswith("public_goods-") and "generic" in prompts
    (model,) = entry["models"]
    assert model["name"] == "fake-gpt" and model["model"] == "openai/fake-gpt" and model["role"] == "player"
    assert model["reported_models"] == ["fake-gpt-2024-08-06"]  # the provider's dated snapshot
    assert model["system_fingerprints"] == [FAKE_FINGERPRINT]
    settings = model["settings"]
    assert "max_tokens" in settings and "temperature" in settings and "timeout_s" not in settings  # no delivery keys


def test_a_run_served_from_the_cache_names_the_models_its_replies_came_from(
    tmp_path: Path, fake_provider_key: str
) -> None:
    with FakeOpenAIServer(max_hang_s=5) as server:
        spec = _model_spec(server, cache=str(tmp_path / "calls.sqlite"))
        run_experiment(spec, tmp_path / "first")
        sent = len(server.requests)
        replayed = run_experiment(spec, tmp_path / "again")  # a new directory: every reply from the cache
        assert len(server.requests) == sent and replayed.model_calls == 0
    (model,) = read_manifest(tmp_path / "again")["runs"][0]["models"]
    assert model["reported_models"] == ["fake-gpt-2024-08-06"]  # noted from the cached replies, no record re-read


def test_the_idiom_dictionary_is_a_recorded_data_source(d: IdiomDictionary) -> None:
    source = data_sources()["idioms"]
    assert source["sha256"] == d.sha256 and source["entries"] == str(len(d))
    assert source["package"].startswith("china-idiom-without-tone ")


def test_a_broken_manifest_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / MANIFEST_NAME).write_text("not json", encoding="utf-8")
    with pytest.raises(DeepEvalError, match="not a readable run manifest"):
        read_manifest(tmp_path)
