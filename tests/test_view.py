"""``deepeval-games view`` (issue 31): the HTML report served on 127.0.0.1 and updated while a run writes.

The live test opens the page in headless Chromium (kept open over the DevTools pipe), commits a match into the
store after the page loaded and waits for its row in the match list: it must appear within 5 seconds, in the same
document (no reload).
"""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path

import pytest

from deepeval_games import run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.reports.html import write_html_report
from deepeval_games.app.reports.view import ReportServer
from deepeval_games.app.storage.store import Store
from deepeval_games.core.records import MatchRecord
from tests.chromium import LivePage, chromium_binary

needs_chromium = pytest.mark.skipif(
    chromium_binary() is None, reason="chromium is not installed (.ci/run installs it: apt-get install -y chromium)"
)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> list[MatchRecord]:
    """Four scripted Public Goods matches, to be committed into a viewed store one part at a time."""
    spec = {
        "experiment": {"name": "view", "game": "deepeval_public_goods(players=2,rounds=1)", "repeats": 4},
        "players": [{"name": "rider", "bot": "pgg_free_rider"}, {"name": "full", "bot": "pgg_full_contributor"}],
    }
    records = run_experiment(spec, tmp_path_factory.mktemp("source")).records
    assert len(records) == 4
    return records


def _commit(run_dir: Path, records: list[MatchRecord]) -> None:
    with Store(run_dir) as store:  # a writer, as a run is
        store.commit_many(records)


def _get(server: ReportServer, path: str, host: str = "127.0.0.1") -> tuple[int, str]:
    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": f"{host}:{port}"})
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8")
    finally:
        connection.close()


@needs_chromium
def test_a_match_committed_after_the_page_opened_appears_without_a_reload(
    tmp_path: Path, played: list[MatchRecord]
) -> None:
    run = tmp_path / "run"
    _commit(run, played[:3])
    with ReportServer([run]) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with LivePage(server.url) as page:
            rows = "document.querySelectorAll('#match-list tr[data-match]').length"
            page.wait_for(f"{rows} === 3", timeout_s=60)
            page.evaluate("window.dgSameDocument = true; document.getElementById('f-player').value = 'rider'")
            _commit(run, played[3:])
            new_row = f"document.querySelector('tr[data-match=\"{played[3].match_id}\"]') !== null"
            seconds = page.wait_for(new_row, timeout_s=5)
            assert seconds < 5, seconds
            assert page.evaluate("window.dgSameDocument") is True  # not reloaded: the script's state is there
            assert page.evaluate("document.getElementById('match-total').textContent") == "4"
            assert page.evaluate("document.getElementById('f-player').value") == "rider"  # a filter stays chosen
            # the tables were swapped in too: the scores table counts the new match (each player in all 4)
            scores = page.evaluate("document.querySelector('[data-table=\"scores\"]').textContent")
            assert "4" in scores
    with pytest.raises(OSError):  # stopped: nothing listens any more
        socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1].strip("/"))), timeout=2)


def test_the_viewer_waits_for_a_first_match_and_serves_only_reads(tmp_path: Path, played: list[MatchRecord]) -> None:
    run = tmp_path / "run"
    with ReportServer([run]) as server:
        status, body = _get(server, "/")
        assert status == 200 and "Waiting for the first match" in body
        assert json.loads(_get(server, "/version.json")[1])["built"] is False
        _commit(run, played[:2])
        assert server.build() and not server.build()  # built once for the change, not again without one
        status, body = _get(server, "/index.html")
        assert status == 200 and 'name="dg-live"' in body and "connect-src 'self'" in body
        version = json.loads(_get(server, "/version.json")[1])
        assert version["built"] and f'content="{version["version"]}"' in body
        assert _get(server, "/data/index.js")[0] == 200
        assert _get(server, "/data/../../etc/passwd")[0] == 404
        assert _get(server, "/", host="attacker.example")[0] == 403  # DNS rebinding: another name is refused
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("POST", "/version.json", body=b"{}")
        assert connection.getresponse().status == 501  # a reader: GET only
        connection.close()
    # the report written to disk stays an offline page: no live stamp, no permission to connect anywhere
    offline = write_html_report([run], tmp_path / "html").read_text(encoding="utf-8")
    assert "dg-live" not in offline.split("<body>")[0] and "connect-src" not in offline


def test_view_names_a_port_in_use(
    tmp_path: Path, played: list[MatchRecord], capsys: pytest.CaptureFixture[str]
) -> None:
    _commit(tmp_path / "run", played[:1])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["view", str(tmp_path / "run"), "--port", str(port)]) == 2
    assert f"cannot serve on 127.0.0.1:{port}" in capsys.readouterr().err
