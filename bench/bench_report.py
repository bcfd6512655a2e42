"""Benchmark: the HTML report of a 5,000-match run, written and then opened in headless Chromium.

Run on demand (not a test): ``python bench/bench_report.py [--matches N] [--keep DIR]``. The run directory is made
from the scripted Idiom Solitaire example (``examples/idiom_scripted.toml``, 180 real matches with up to 50 turns
each), its records committed again under fresh match ids until the store holds N matches. Then it times

* ``deepeval-games report RUN --html OUT`` (in process: :func:`deepeval_games.app.reports.html.write_html_report`),
  against a target of 30 s, with the peak memory of the process;
* opening ``OUT/index.html#samples`` in headless Chromium until its scripts have run (the match list filled in,
  one transcript per outcome loaded from the chunk files), against a target of 5 s.

Chromium's time includes its own start; the DOM dump is checked for the match count so a page that failed to load
does not pass as fast.
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deepeval_games import run_experiment
from deepeval_games.app.reports.html import write_html_report
from deepeval_games.app.storage.store import Store
from tests.chromium import chromium_binary, visit

REPORT_TARGET_S = 30.0
OPEN_TARGET_S = 5.0
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "idiom_scripted.toml"


def make_run(run_dir: Path, matches: int) -> float:
    """A run directory of ``matches`` idiom matches (real records, committed again under new ids); seconds taken."""
    start = time.perf_counter()
    seed_dir = run_dir.parent / "seed-run"
    records = run_experiment(EXAMPLE, seed_dir).records
    with Store(run_dir) as store:
        for n in range(matches):
            record = records[n % len(records)].model_copy()
            record.match_id = f"bench{n:07d}"
            record.repeat = n // len(records)
            store.commit(record)
    return time.perf_counter() - start


def main() -> int:
    """Build the run, time the report and the page; print both against their targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=5000)
    parser.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder)")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dg-bench-report-"))
    root.mkdir(parents=True, exist_ok=True)
    run_dir, out = root / "run", root / "html"
    for stale in (run_dir, root / "seed-run", out):
        shutil.rmtree(stale, ignore_errors=True)
    built = make_run(run_dir, args.matches)
    print(f"run directory: {args.matches} matches in {built:.1f} s ({run_dir})")

    start = time.perf_counter()
    page = write_html_report([run_dir], out)
    report_s = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size_mb = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 2**20
    chunks = len(list((out / "data").glob("chunk-*.js")))
    verdict = "within" if report_s <= REPORT_TARGET_S else "OVER"
    print(
        f"report --html: {report_s:.1f} s (target {REPORT_TARGET_S:.0f} s: {verdict}); peak RSS {peak_mb:.0f} MiB; "
        f"{size_mb:.1f} MiB on disk, index.html {page.stat().st_size / 2**20:.1f} MiB, {chunks} chunk files"
    )

    if chromium_binary() is None:
        print("chromium not installed: page open not timed (apt-get install -y chromium)")
        return 1
    opened = visit(page, fragment="samples", wait_ms=5000)
    found = re.search(r'id="f-count">(\d+) of (\d+) matches', opened.dom)
    loaded = found is not None and int(found.group(2)) == args.matches and 'class="transcript"' in opened.dom
    verdict = "within" if opened.seconds <= OPEN_TARGET_S else "OVER"
    print(
        f"chromium open (start, load, list filled, sample transcripts): {opened.seconds:.1f} s "
        f"(target {OPEN_TARGET_S:.0f} s: {verdict}); page complete: {loaded}; network requests: "
        f"{len(opened.page_requests)}"
    )
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if loaded and not opened.page_requests else 1


if __name__ == "__main__":
    sys.exit(main())
