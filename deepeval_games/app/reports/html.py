"""The HTML report: a folder that opens from disk (``file://``) with no server and no network.

``OUT/index.html`` holds every section of :mod:`deepeval_games.app.reports.report` (tables as HTML tables, figures as
inline
SVG), the CSS and the script inline, and a browser of every match: filters (task, player, seat, outcome, data item)
over a compact index, pages of 50 matches, and each transcript turn by turn as a seat saw it (rules and
observations from the message pool, replies, re-asks, transport retries, the action taken, the judge's verdict,
scorer metrics). Transcripts live in ``OUT/data/chunk-NNNNN.js`` files of :data:`CHUNK` matches each, loaded with a
``<script>`` element when first needed (browsers refuse ``fetch()`` from ``file://``, not scripts). The page loads
nothing from elsewhere: no fonts, no CDN, no images but inline ones. A match stored as its moves
(``transcript = "moves"``) is shown with the messages its moves replay to
(:func:`~deepeval_games.core.transcript.with_messages`); one that does not replay here is shown without them, and a
warning says why.

The folder is written while the stores stream past: a chunk is written as soon as it is full, so memory holds the
slim records the tables need and one chunk of transcripts. ``index.html#samples`` opens, at load, one transcript per
turn outcome that happened (and one with retried transport errors); ``index.html#player=NAME&seat=0&outcome=invalid``
(keys ``task``, ``player``, ``seat``, ``outcome``, ``item``) opens the match list so filtered.
"""

from __future__ import annotations

import html
import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepeval_games.app.reports.report import ReportData, load_report, render_blocks
from deepeval_games.app.reports.runs import RunSource, game_label, short_labels, unique_labels
from deepeval_games.app.reports.sections import Block, variant_title
from deepeval_games.core.bot import Outcome
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import DATA_ITEM_PARAMETERS, game_variant
from deepeval_games.core.transcript import with_messages

log = logging.getLogger(__name__)

__all__ = ["CHUNK", "RETRIED", "HtmlReport", "for_people", "transcript_json", "write_html_report"]

CHUNK = 200
"""Matches per transcript data file."""
RETRIED = "transport_retry"
"""The sample key of a match whose model calls were retried after transport errors (429, 5xx, timeouts)."""


def _data_item(game: str) -> str:
    inside = game.split("(", 1)[1].rstrip(")") if "(" in game else ""
    return ",".join(p for p in inside.split(",") if p.split("=", 1)[0] in DATA_ITEM_PARAMETERS)


def _reask_text(prompt: list[dict[str, str]]) -> str:
    """What the referee said at a re-ask: the last user message of that ask's prompt."""
    for message in reversed(prompt):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def _whole(record: MatchRecord) -> MatchRecord:
    """The record with its messages (a ``moves`` record's replayed), or as it is when they cannot be rebuilt."""
    try:
        return with_messages(record)
    except DeepEvalError as exc:  # a record that does not replay, a game not registered here
        log.warning("match %s: its transcript is shown without messages: %s", record.match_id, exc)
        return record


def for_people(value: Any, digits: int = 12) -> Any:
    """``value`` with every float rounded to ``digits`` significant digits (numbers, lists and mappings walked):
    ``48.00000000000001`` is shown as ``48``. The records keep the full precision; only what a person reads is
    rounded."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else value
    if isinstance(value, Mapping):
        return {key: for_people(item, digits) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [for_people(item, digits) for item in value]
    return value


def transcript_json(record: MatchRecord, run: str) -> dict[str, Any]:
    """The compact transcript of one match, as the page's script reads it (a ``moves`` record's messages
    replayed)."""
    record = _whole(record)
    turns = []
    for t in record.turns:
        turns.append(
            {
                "i": t.index,
                "r": t.round,
                "s": t.seat,
                "a": t.action_string,
                "t": t.text if t.text != t.action_string else "",
                "o": Outcome(t.outcome).value,
                "re": t.retries,
                "rep": t.raw_replies,
                "ask": [_reask_text(p) for p in t.prompts[1:]],
                "fr": t.finish_reasons,
                "at": [[a.status, a.http_status, a.error, round(a.wait_s, 3)] for a in t.attempts],
                "err": t.error or "",
                "m": t.model or "",
                "ti": t.tokens_in,
                "to": t.tokens_out,
                "c": round(t.cost_usd, 6),
                "l": round(t.latency_s, 3),
            }
        )
    messages = [
        {
            "r": m.get("round", 0),
            "f": m.get("sender", -1),
            "to": m.get("recipients", []),
            "k": m.get("kind", ""),
            "t": m.get("text", ""),
        }
        for m in record.messages
    ]
    return {
        "id": record.match_id,
        "run": run,
        "game": record.game,
        "seats": record.seats,
        "roles": record.roles,
        "players": record.players,
        "returns": for_people(record.returns),
        "status": record.status,
        "error": record.error or "",
        "metrics": for_people(record.metrics),
        "repeat": record.repeat,
        "seed": str(record.seed),
        "turns": turns,
        "messages": messages,
    }


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element and a JavaScript file."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


@dataclass
class HtmlReport:
    """Collects the match index and writes transcript chunks while records stream past."""

    out: Path
    chunk: int = CHUNK
    index: list[list[Any]] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    samples: dict[str, int] = field(default_factory=dict)
    """Per turn outcome (and :data:`RETRIED`), the index of the first match that has it."""
    _pending: list[dict[str, Any]] = field(default_factory=list)
    chunks: int = 0

    def __post_init__(self) -> None:
        (self.out / "data").mkdir(parents=True, exist_ok=True)
        for old in (self.out / "data").glob("chunk-*.js"):
            old.unlink()

    def add(self, run: RunSource, record: MatchRecord) -> None:
        """Index one match and queue its transcript (written when the chunk is full)."""
        number = len(self.index)
        variant = game_variant(record.game)
        if variant not in self.variants:
            self.variants.append(variant)
        outcomes_by_seat: list[list[str]] = [[] for _ in record.seats]
        retried = False
        for t in record.turns:
            outcome = Outcome(t.outcome).value
            if 0 <= t.seat < len(record.seats) and outcome not in outcomes_by_seat[t.seat]:
                outcomes_by_seat[t.seat].append(outcome)
            retried = retried or any(a.status == "infra" for a in t.attempts)
        for outcome in {o for seat in outcomes_by_seat for o in seat}:
            self.samples.setdefault(outcome, number)
        if retried:
            self.samples.setdefault(RETRIED, number)
        self.index.append(
            [
                record.match_id,
                self.variants.index(variant),
                _data_item(record.game),
                record.seats,
                [round(float(v), 4) for v in record.returns],
                outcomes_by_seat,
                record.status,
                run.label,
                int(retried),
            ]
        )
        self._pending.append(transcript_json(record, run.label))
        if len(self._pending) >= self.chunk:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        path = self.out / "data" / f"chunk-{self.chunks:05d}.js"
        path.write_text(f"DG_CHUNK({self.chunks},{_script_json(self._pending)});\n", encoding="utf-8")
        self.chunks += 1
        self._pending = []

    def finish(self, data: ReportData, *, epsilon: float | None, title: str, live: str | None = None) -> Path:
        """Write the last chunk, the index and ``index.html``; returns the page's path.

        ``live``: the page is served by ``deepeval-games view`` (:mod:`deepeval_games.app.reports.view`) and this is the
        version stamp of the stores it shows: the page asks its server for the stamp now and then and, when it
        changed, swaps in the new tables, figures and match index without reloading.
        """
        self._flush()
        meta = {
            "variants": self.variants,
            "labels": short_labels(self.variants),
            "chunk": self.chunk,
            "samples": self.samples,
            "outcomes": [o.value for o in Outcome] + [RETRIED],
        }
        (self.out / "data" / "index.js").write_text(
            f"DG_INDEX({_script_json(meta)},{_script_json(self.index)});\n", encoding="utf-8"
        )
        page = self.out / "index.html"
        text = _page(data, epsilon=epsilon, title=title, matches=len(self.index), live=live)
        page.write_text(text, encoding="utf-8")
        return page


def _cell(text: str) -> str:
    numeric = text.replace("[", "").replace("]", "").replace(",", "").replace("%", "").replace(" ", "")
    try:
        float(numeric)
    except ValueError:
        return f'<td class="t">{html.escape(text)}</td>'
    return f"<td>{html.escape(text)}</td>"


def _caption(block: Block, heading: str, tag: str, labels: Mapping[str, str]) -> str:
    """The block's caption; none when it would repeat the heading of its section (one heading per section). A game
    string in it is shown by its label (:func:`~deepeval_games.app.reports.runs.game_label`), the string itself in
    the caption's tooltip."""
    if block.title == heading:
        return ""
    shown, full = block.title, ""
    for game, label in labels.items():
        if game in shown:
            shown, full = shown.replace(game, label), block.title
    tip = f' title="{html.escape(full)}"' if full else ""
    return f"<{tag}{tip}>{html.escape(shown)}</{tag}>"


def _table_html(block: Block, heading: str, labels: Mapping[str, str]) -> str:
    key = html.escape(block.key)
    note = f'<p class="dg-note" data-note="{key}">{html.escape(block.note)}</p>' if block.note else ""
    if block.header:
        body = "".join("<tr>" + "".join(_cell(str(cell)) for cell in row) + "</tr>" for row in block.rows)
        head = "".join(f"<th>{html.escape(h)}</th>" for h in block.header)
        return (
            f'<div class="dg-scroll"><table class="dg-table" data-table="{key}">'
            f"{_caption(block, heading, 'caption', labels)}"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{note}"
        )
    # a block of text alone: a sentence as a paragraph; lines laid out in columns (a table no module gave as cells)
    # as they were printed
    text = html.escape(block.text)
    shown = f'<p class="dg-prose">{text}</p>' if "\n" not in block.text.strip() else f"<pre>{text}</pre>"
    return (
        f'<figure class="dg-table dg-text" data-table="{key}">{_caption(block, heading, "figcaption", labels)}'
        f"{shown}{note}</figure>"
    )


def _figure_html(block: Block, heading: str, labels: Mapping[str, str]) -> str:
    return (
        f'<figure class="dg-figure" data-figure="{html.escape(block.key)}">{block.svg}'
        f"{_caption(block, heading, 'figcaption', labels)}</figure>"
    )


def _blocks_html(blocks: Sequence[Block], heading: str, labels: Mapping[str, str]) -> str:
    """The blocks of a section headed ``heading``: a caption that repeats it is left out, a game string in a
    caption is shown by its label (``labels``: game string -> label)."""
    return "\n".join(
        _figure_html(b, heading, labels) if b.kind == "figure" else _table_html(b, heading, labels) for b in blocks
    )


def _variant_heading(variant: str, records: Sequence[MatchRecord], label: str) -> str:
    """A task's heading: its label (the full game string in the tooltip); a pooled variant says how many data
    items it pools."""
    title = variant_title(variant, records)
    return label if title == variant or title == records[0].game else title.replace(variant, label, 1)


def _page(data: ReportData, *, epsilon: float | None, title: str, matches: int, live: str | None = None) -> str:
    variant_parts: dict[str, list[str]] = {v: [] for v in data.variants}
    labels = dict(zip(data.variants, unique_labels(list(data.variants)), strict=True))
    games = {r.game for records in data.variants.values() for r in records}  # a data item's game string too
    caption_labels = {g: game_label(g) for g in sorted(games, key=len, reverse=True)} | labels
    wide: list[str] = []
    for sec, variant, blocks in render_blocks(data, epsilon=epsilon, figures=True):
        part = (
            f'<section class="dg-section" data-section="{html.escape(sec.key)}">'
            f"<h3>{html.escape(sec.title)}</h3>{_blocks_html(blocks, sec.title, caption_labels)}</section>"
        )
        (variant_parts[variant] if variant else wide).append(part)
    toc, body = [], []
    for n, (variant, parts) in enumerate(variant_parts.items()):
        records = data.variants[variant]
        heading = html.escape(_variant_heading(variant, records, labels[variant]))
        full = html.escape(variant_title(variant, records))
        toc.append(f'<li><a href="#task-{n}" title="{full}">{heading}</a> ({len(records)} matches)</li>')
        body.append(
            f'<section class="dg-task" id="task-{n}" data-variant="{html.escape(variant)}">'
            f'<h2 title="{full}">{heading}</h2>'
            f'<details class="dg-game"><summary>game string</summary><code>{full}</code></details>'
            + "".join(parts)
            + "</section>"
        )
    if wide:
        toc.append('<li><a href="#report-wide">Runs, players and judges</a></li>')
        body.append('<section id="report-wide"><h2>Runs, players and judges</h2>' + "".join(wide) + "</section>")
    toc.append('<li><a href="#matches">Matches and transcripts</a></li>')
    runs = ", ".join(html.escape(r.label) for r in data.runs)
    generated = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    partial = data.partial  # a run holding fewer matches than it planned: said at the top
    return _TEMPLATE.format(
        live_meta="" if live is None else f'<meta name="dg-live" content="{html.escape(live)}">\n',
        connect="" if live is None else " connect-src 'self';",
        live_note="" if live is None else " · live: updates while the run writes",
        partial="" if partial is None else f'\n<p class="dg-partial" role="status">{html.escape(partial)}</p>',
        title=html.escape(title),
        css=_CSS,
        script=_SCRIPT,
        runs=runs,
        matches=matches,
        generated=generated,
        toc="".join(toc),
        body="\n".join(body),
    )


def write_html_report(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    *,
    epsilon: float | None = None,
    chunk: int = CHUNK,
    live: str | None = None,
    intervals: str | None = None,
    kind: str | None = None,
) -> Path:
    """Write the HTML report of ``run_dirs`` into the folder ``out``; returns ``out/index.html``. ``live``: see
    :meth:`HtmlReport.finish`; ``intervals``: the interval version (default: the one the runs recorded); ``kind``:
    ``fixed`` or ``anytime`` intervals instead of the kind valid for how the runs were collected
    (:meth:`~analysis.stats.intervals.IntervalPolicy.requested`, applied once to the runs' policy).

    Raises:
        DeepEvalError: a run directory without results, or ``out`` cannot be written (a file, no permission).
    """
    writer: HtmlReport | None = None
    folder = Path(out)
    try:
        (folder / "data").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DeepEvalError(f"cannot write the HTML report into {folder}: {exc}") from exc

    def add(run: RunSource, record: MatchRecord) -> None:
        nonlocal writer
        if writer is None:
            writer = HtmlReport(folder, chunk)
        writer.add(run, record)

    data = load_report(run_dirs, on_record=add)
    if intervals is not None or kind is not None:
        from analysis.stats.intervals import OLD_POLICY

        data.intervals = (data.intervals or OLD_POLICY).requested(intervals, kind)
    if writer is None:
        writer = HtmlReport(folder, chunk)
    title = "deepeval-games report: " + ", ".join(r.label for r in data.runs)
    return writer.finish(data, epsilon=epsilon, title=title, live=live)


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
{live_meta}<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'self' 'unsafe-inline' \
file:; style-src 'unsafe-inline'; img-src data:;{connect}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body>
<header id="report-head"><h1>{title}</h1><p>Runs: {runs} · <span id="match-total">{matches}</span> matches · \
generated {generated}{live_note}</p>{partial}
<nav><ol>{toc}</ol></nav></header>
<main>
<div id="report-body">
{body}
</div>
<section id="matches"><h2>Matches and transcripts</h2>
<div id="samples-bar">Examples: one match per turn outcome <span id="samples-links"></span>
<button id="show-samples" type="button">show them all</button></div>
<div id="samples-area"></div>
<form id="filters">
<label>task <select id="f-task"><option value="">any</option></select></label>
<label>player <select id="f-player"><option value="">any</option></select></label>
<label>seat <select id="f-seat"><option value="">any</option></select></label>
<label>outcome <select id="f-outcome"><option value="">any</option></select></label>
<label>data item <input id="f-item" type="search" placeholder="contains..."></label>
<span id="f-count"></span>
</form>
<div class="dg-scroll"><table id="match-list" class="dg-list"><thead><tr><th>#</th><th>task</th><th>data item</th>
<th>seats</th><th>returns</th><th>outcomes</th><th>run</th></tr></thead><tbody></tbody></table></div>
<div id="pager"><button id="prev" type="button">&larr; previous</button> <span id="page"></span>
<button id="next" type="button">next &rarr;</button></div>
<div id="transcript"></div>
</section>
</main>
<script>window.DG_INDEX=function(meta,rows){{window.DG_META=meta;window.DG_ROWS=rows;}};</script>
<script src="data/index.js"></script>
<script>{script}</script>
</body></html>
"""

_CSS = """
*,*::before,*::after{box-sizing:border-box}
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px;color:#222}
h1{font-size:20px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:32px}h3{font-size:15px}
h1,h2,h3,caption,figcaption,nav li,code,.dg-prose,.dg-note{overflow-wrap:anywhere}
.dg-scroll{max-width:100%;overflow-x:auto;margin:8px 0}.dg-scroll>table{margin:0}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
td{white-space:nowrap}td.t{white-space:normal;overflow-wrap:break-word;min-width:6em}
td:first-child,th:first-child,td.t{text-align:left}caption,figcaption{font-weight:600;text-align:left;padding:4px 0}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;max-width:100%;font-size:12px}
.dg-note,.dg-prose{max-width:80em;color:#444}
.dg-partial{background:#fff4e5;border-left:4px solid #e65100;padding:6px 10px;font-weight:600}
.dg-game{margin:4px 0 8px;color:#555}.dg-game summary{cursor:pointer;font-size:12px}
.dg-game code{display:block;font-size:12px;background:#f6f6f6;padding:4px 8px}
figure{margin:8px 0;max-width:100%}figure svg{max-width:100%;height:auto}
select{max-width:100%}#filters{display:flex;flex-wrap:wrap;gap:4px 12px;align-items:center;margin:8px 0}
td:first-child{white-space:nowrap}
.dg-list td{white-space:normal;text-align:left}.dg-list td:first-child{text-align:right}
.game-string{color:#555;font-size:12px;overflow-wrap:anywhere}
.dg-list tbody tr{cursor:pointer}.dg-list tbody tr:hover{background:#eef}
.o-ok{color:#2e7d32}.o-reasked{color:#ef6c00}.o-invalid,.o-refusal,.o-context_overflow,.o-truncated,
.o-infra_error{color:#c62828;font-weight:600}
.turn{border-left:3px solid #bbb;margin:6px 0;padding:4px 8px}.turn.seat-judge{border-color:#6a1b9a}
.msg{color:#555;margin:4px 0;padding:4px 8px;background:#fafafa;white-space:pre-wrap}
.reply{white-space:pre-wrap;background:#f3f7ff;padding:4px;margin:2px 0}
.reask{white-space:pre-wrap;background:#fff4e5;padding:4px;margin:2px 0}
.transcript,.turn,.msg,.reply,.reask,.action,.error,.attempt-retry{overflow-wrap:anywhere}
.transcript{border:1px solid #ccc;padding:8px;margin:12px 0}
.attempt-retry{color:#c62828}
"""

_SCRIPT = r"""
(function(){
var META=window.DG_META, INDEX=window.DG_ROWS||[], PAGE=50, page=0, shown=[], chunks={}, waiting={};
// served by `deepeval-games view`: the stores' version stamp, asked for again to pick up new matches
var LIVE=document.querySelector('meta[name="dg-live"]'), STAMP=LIVE?LIVE.content:null;
function fresh(path){return STAMP===null?path:path+'?v='+encodeURIComponent(STAMP);}
function el(tag, cls, text){var e=document.createElement(tag); if(cls) e.className=cls;
  if(text!==undefined&&text!==null) e.textContent=String(text); return e;}
function pad(n){return ('00000'+n).slice(-5);}
window.DG_CHUNK=function(n, list){chunks[n]=list; (waiting[n]||[]).forEach(function(cb){cb(list);}); waiting[n]=[];};
function withMatch(i, cb){var n=Math.floor(i/META.chunk);
  if(chunks[n]){cb(chunks[n][i%META.chunk]); return;}
  var first=!waiting[n]||!waiting[n].length; (waiting[n]=waiting[n]||[]).push(function(list){cb(list[i%META.chunk]);});
  if(first){var s=document.createElement('script'); s.src=fresh('data/chunk-'+pad(n)+'.js');
    document.body.appendChild(s);}}
function option(sel, value, text){var o=el('option', '', text); o.value=value; sel.appendChild(o);}
// a task's short label (its full game string is the row's tooltip and the transcript's second line)
function label(v){return (META.labels&&META.labels[v])||META.variants[v];}
function fill(id, items){  // the filter's choices, again after the index changed; the choice made is kept
  var sel=document.getElementById(id), keep=sel.value;
  while(sel.options.length>1) sel.remove(1);
  items.forEach(function(it){option(sel, it[0], it[1]);}); sel.value=keep; if(sel.value!==keep) sel.value='';}
function choices(){
  fill('f-task', META.variants.map(function(v,i){return [String(i), label(i)];}));
  var names={}, seats=0, seatItems=[];
  INDEX.forEach(function(r){r[3].forEach(function(n){names[n]=1;}); seats=Math.max(seats,r[3].length);});
  fill('f-player', Object.keys(names).sort().map(function(n){return [n, n];}));
  for(var s=0;s<seats;s++) seatItems.push([String(s), 'seat '+s+' (Player '+(s+1)+')']);
  fill('f-seat', seatItems);
  fill('f-outcome', META.outcomes.map(function(o){return [o, o];}));
  var links=document.getElementById('samples-links'); links.textContent='';
  Object.keys(META.samples).forEach(function(o){var a=el('a', 'o-'+o, o); a.href='#'; a.style.marginRight='8px';
    a.onclick=function(e){e.preventDefault(); open(META.samples[o]);}; links.appendChild(a);});
}
function setup(){
  choices();
  ['f-task','f-player','f-seat','f-outcome','f-item'].forEach(function(id){
    document.getElementById(id).addEventListener('input', function(){page=0; filter();});});
  document.getElementById('prev').onclick=function(){if(page>0){page--; list();}};
  document.getElementById('next').onclick=function(){if((page+1)*PAGE<shown.length){page++; list();}};
  document.getElementById('show-samples').onclick=showSamples;
  // a link can carry filters: index.html#player=NAME&seat=0&outcome=invalid&item=start%3D...&task=VARIANT
  var hash=location.hash.slice(1);
  if(hash.indexOf('=')>=0){hash.split('&').forEach(function(kv){var i=kv.indexOf('=');
    var k=decodeURIComponent(kv.slice(0,i)), v=decodeURIComponent(kv.slice(i+1)), box=document.getElementById('f-'+k);
    if(k==='task'){var n=META.variants.indexOf(v); v=n>=0?String(n):v;}
    if(box) box.value=v;});}
  filter();
  if(hash==='samples') showSamples();
}
function matches(r){
  var t=document.getElementById('f-task').value, p=document.getElementById('f-player').value,
      s=document.getElementById('f-seat').value, o=document.getElementById('f-outcome').value,
      item=document.getElementById('f-item').value.trim();
  if(t!==''&&String(r[1])!==t) return false;
  if(item&&r[2].indexOf(item)<0) return false;
  var seats=[]; for(var k=0;k<r[3].length;k++) seats.push(k);
  if(p) seats=seats.filter(function(k){return r[3][k]===p;});
  if(s!=='') seats=seats.filter(function(k){return String(k)===s;});
  if(!seats.length) return false;
  if(o==='transport_retry') return r[8]===1;
  if(o) return seats.some(function(k){return r[5][k].indexOf(o)>=0;});
  return true;
}
function filter(){shown=[]; INDEX.forEach(function(r,i){if(matches(r)) shown.push(i);}); list();}
function list(){
  var body=document.querySelector('#match-list tbody'); body.textContent='';
  shown.slice(page*PAGE,(page+1)*PAGE).forEach(function(i){var r=INDEX[i], tr=el('tr');
    tr.dataset.match=r[0];
    [i+1, label(r[1]), r[2], r[3].join(' vs '), r[4].join(', '),
     r[5].map(function(x){return x.join('/');}).join(' | '), r[7]].forEach(function(c){tr.appendChild(el('td','',c));});
    tr.children[1].title=META.variants[r[1]];
    tr.onclick=function(){open(i);}; body.appendChild(tr);});
  document.getElementById('f-count').textContent=shown.length+' of '+INDEX.length+' matches';
  document.getElementById('page').textContent='page '+(page+1)+' of '+Math.max(1,Math.ceil(shown.length/PAGE));
}
function seatName(m, s){if(s===-1) return 'chance'; if(s===-2) return 'judge';
  return 'Player '+(s+1)+' ('+m.seats[s]+(m.roles&&m.roles[s]?', '+m.roles[s]:'')+')';}
function render(m, i, view){
  var box=el('div','transcript'); box.dataset.match=m.id;
  box.appendChild(el('h3','', label(INDEX[i][1])+' · run '+m.run+' · repeat '+m.repeat));
  box.appendChild(el('div','game-string', m.game+' · match '+m.id));
  var info=el('p','', 'Seats: '+m.seats.map(function(n,k){return seatName(m,k)+' → '+m.returns[k];}).join('; ')
    +' · status '+m.status+(m.error?' ('+m.error+')':''));
  box.appendChild(info);
  if(m.metrics&&Object.keys(m.metrics).length){var pm=el('pre','metrics', 'metrics: '+JSON.stringify(m.metrics,null,1));
    box.appendChild(pm);}
  var sel=el('select'); option(sel,'all','every seat');
  m.seats.forEach(function(n,k){option(sel,String(k),'as '+seatName(m,k)+' saw it');});
  sel.value=view===undefined?'all':String(view); box.appendChild(sel);
  var body=el('div','turns'); box.appendChild(body);
  function draw(){body.textContent=''; var v=sel.value, mi=0;
    // a turn stands where its move entered the pool (after what the seat was told, before the round's result);
    // a turn with no move in the pool (a judge's, a stand-in's) after the messages of its round
    var items=[], moves={}, last={};
    m.messages.forEach(function(x,k){items.push({p:k, n:0, msg:x}); last[x.r]=k;
      if(x.k==='move'&&x.f>=0){var key=x.r+':'+x.f; (moves[key]=moves[key]||[]).push(k);}});
    m.turns.forEach(function(t,k){var slot=(moves[t.r+':'+t.s]||[]).shift(), p=slot;
      if(p===undefined){p=-1; Object.keys(last).forEach(function(r){if(+r<=t.r&&last[r]>p) p=last[r];}); p+=0.5;}
      items.push({p:p, n:k+1, turn:t});});
    items.sort(function(a,b){return a.p-b.p||a.n-b.n;});
    items.forEach(function(it){
      if(it.msg){var x=it.msg; if(x.k==='move'&&x.f>=0) return;  // the seat's own move: shown by its turn
        if(v!=='all'&&x.to.indexOf(+v)<0) return;
        var d=el('div','msg'); d.dataset.kind=x.k;
        d.textContent='[round '+x.r+'] '+(x.f<0?'referee':seatName(m,x.f))+' → '
          +x.to.map(function(s){return 'Player '+(s+1);}).join(', ')+
          (x.k?' ('+x.k+')':'')+':\n'+x.t; body.appendChild(d); return;}
      var t=it.turn; if(v!=='all'&&t.s!==+v) return;
      var d=el('div','turn'+(t.s===-2?' seat-judge':'')); d.dataset.outcome=t.o;
      var h=el('div'); h.appendChild(el('b','', '[round '+t.r+'] '+seatName(m,t.s)+': '));
      h.appendChild(el('span','o-'+t.o, t.o));
      if(t.m) h.appendChild(el('span','', ' · '+t.m+' · '+t.ti+'/'+t.to+' tokens · $'+t.c));
      d.appendChild(h);
      var retried=t.at.filter(function(a){return a[0]==='infra';});
      if(retried.length){d.appendChild(el('div','attempt-retry', 'transport retries: '+retried.map(function(a){
        return (a[1]||'')+' '+(a[2]||'')+' (waited '+a[3]+' s)';}).join('; ')));}
      t.rep.forEach(function(rep,k){
        if(k>0){d.appendChild(el('div','reask', 're-ask '+k+': '+(t.ask[k-1]||'')));}
        var label='reply'+(t.rep.length>1?' '+(k+1):'')+(t.fr[k]?' ['+t.fr[k]+']':'');
        d.appendChild(el('div','reply', label+': '+rep));});
      d.appendChild(el('div','action', (t.s===-2?'verdict: ':'action: ')+t.a));
      if(t.t&&!t.rep.length) d.appendChild(el('div','reply', t.t));
      if(t.err) d.appendChild(el('div','error o-'+t.o, t.err));
      body.appendChild(d);});}
  sel.onchange=draw; draw(); return box;
}
function open(i){withMatch(i, function(m){var t=document.getElementById('transcript'); t.textContent='';
  t.appendChild(render(m, i)); t.scrollIntoView();});}
function showSamples(){var area=document.getElementById('samples-area'); area.textContent='';
  Object.keys(META.samples).forEach(function(o){var i=META.samples[o], slot=el('div','sample'); slot.dataset.sample=o;
    slot.appendChild(el('h3','', 'Example of '+o)); area.appendChild(slot);
    withMatch(i, function(m){var box=render(m, i); box.dataset.sampleOutcome=o; slot.appendChild(box);});});}
// live: a new stamp brings the new page's tables and figures (swapped in place) and its match index (the filters,
// the page of the list and the open transcript stay)
function refresh(){
  return fetch('index.html', {cache: 'no-store'}).then(function(r){return r.text();}).then(function(text){
    var doc=new DOMParser().parseFromString(text, 'text/html'), stamp=doc.querySelector('meta[name="dg-live"]');
    if(!stamp||stamp.content===STAMP) return;
    STAMP=stamp.content;
    ['report-head', 'report-body'].forEach(function(id){var mine=document.getElementById(id),
      theirs=doc.getElementById(id); if(mine&&theirs) mine.innerHTML=theirs.innerHTML;});
    return new Promise(function(done){var s=document.createElement('script'); s.src=fresh('data/index.js');
      s.onload=s.onerror=function(){s.remove(); done();}; document.body.appendChild(s);});});
}
function poll(){
  fetch('version.json', {cache: 'no-store'}).then(function(r){return r.json();})
    .then(function(v){if(v.version!==STAMP) return refresh();})
    .catch(function(){}).then(function(){setTimeout(poll, 1000);});
}
if(META){setup();}
else{document.getElementById('f-count').textContent='the match index (data/index.js) did not load';}
if(LIVE){
  window.DG_INDEX=function(meta, rows){var first=!META; META=meta; INDEX=rows; chunks={};
    if(first) setup(); else {choices(); filter();}};
  setTimeout(poll, 1000);
}
})();
"""
