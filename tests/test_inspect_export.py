"""``export --format inspect`` (issue 31): runs written as inspect_ai eval logs and read back with inspect_ai's own
reader: one log per player and task, one sample per match, the seat's transcript as messages, its scores and its
model usage. Skipped where inspect_ai is not installed (the ``dev`` extra installs it)."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from deepeval_games import run_experiment
from deepeval_games.app.commands.cli import main
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

REPO = Path(__file__).resolve().parent.parent
ANSWER = '{"reason": "r", "coins": 3}'


@pytest.mark.usefixtures("fake_provider_key")
def test_inspect_logs_read_back_with_one_sample_per_match_and_the_scores(tmp_path: Path) -> None:
    log_api = pytest.importorskip("inspect_ai.log")
    with FakeOpenAIServer(default=Behaviour.reply(ANSWER), max_hang_s=5) as server:
        server.script(Behaviour.reply("no idea"))  # the first call is re-asked
        spec = {
            "experiment": {"name": "inspect", "game": "deepeval_public_goods(players=2,rounds=2)", "repeats": 3},
            "players": [model_player("fake-model", server), {"name": "free", "bot": "pgg_free_rider"}],
        }
        records = run_experiment(spec, tmp_path / "run").records
    assert len(records) == 3
    assert main(["export", str(tmp_path / "run"), "--format", "inspect", "--out", str(tmp_path / "logs")]) == 0
    logs = {log.eval.model: log for log in map(log_api.read_eval_log, map(str, (tmp_path / "logs").glob("*.eval")))}
    assert set(logs) == {"openai/fake-model", "scripted/free"}  # one log per player of the one task
    by_id = {r.match_id: r for r in records}
    for model, player in (("openai/fake-model", "fake-model"), ("scripted/free", "free")):
        log = logs[model]
        assert log.status == "success" and log.eval.task == "deepeval_public_goods"
        assert log.samples is not None and sorted(s.id for s in log.samples) == sorted(by_id)  # one per match
        returns = []
        for sample in log.samples:
            record = by_id[str(sample.id)]
            seat = record.seats.index(player)
            returns.append(record.returns[seat])
            assert sample.scores is not None and sample.scores["return"].value == pytest.approx(record.returns[seat])
            assert sample.scores["valid_moves"].value == 1.0
            roles = [m.role for m in sample.messages]
            retries = sum(t.retries for t in record.turns if t.seat == seat)
            assert roles[0] == "system" and roles.count("assistant") == 2 + retries  # one reply per ask, 2 rounds
            assert sample.metadata["player_seats"] == [seat] and sample.metadata["returns"] == record.returns
        scores = {s.name: s for s in log.results.scores} if log.results else {}
        assert scores["return"].metrics["mean"].value == pytest.approx(statistics.fmean(returns))  # Eq. 1's mean
    model_sample = logs["openai/fake-model"].samples[0]
    assert ANSWER in [m.text for m in model_sample.messages if m.role == "assistant"]
    assert model_sample.output.completion == ANSWER  # the last reply: inspect's "answer" column
    reasked = [s for s in logs["openai/fake-model"].samples if "no idea" in [m.text for m in s.messages]]
    assert len(reasked) == 1 and reasked[0].scores["valid_moves"].value == 1.0  # a move after a re-ask is its own
    said = [(m.role, m.text) for m in reasked[0].messages]
    where = said.index(("assistant", "no idea"))
    assert said[where + 1][0] == "user" and said[where + 2] == ("assistant", ANSWER)  # the re-ask, then the answer
    record = by_id[str(model_sample.id)]
    used = model_sample.model_usage["openai/fake-model"]
    seat = record.seats.index("fake-model")
    assert used.input_tokens == sum(t.tokens_in for t in record.turns if t.seat == seat) > 0
    assert logs["scripted/free"].samples[0].model_usage == {}  # a bot calls no model


def test_inspect_export_without_inspect_ai_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = {
        "experiment": {"name": "x", "game": "deepeval_public_goods(players=2,rounds=1)", "repeats": 1},
        "players": [{"name": "a", "bot": "pgg_free_rider"}, {"name": "b", "bot": "pgg_full_contributor"}],
    }
    run_experiment(spec, tmp_path / "run")
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # as if not installed
    assert main(["export", str(tmp_path / "run"), "--format", "inspect", "--out", str(tmp_path / "logs")]) == 2
    assert 'pip install "deepeval-games[inspect]"' in capsys.readouterr().err


def test_inspect_ai_is_imported_only_when_logs_are_written() -> None:
    code = "import sys, deepeval_games.app.commands.cli, analysis.inspect_logs; print('inspect_ai' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
