"""The parent's side of the child protocol: how the harness is started, and how its records are read.

The child (:mod:`deepeval_games.infra.sandbox.child`, compiled here once and never imported) is started as
``python -I -S -B -c BOOTSTRAP``; it reads ``(harness code, payload)``, marshalled, from its stdin and
answers on an inherited pipe, one record a line, framed with the run's random nonce and a tag: a keyed BLAKE2b
(:func:`record_tag`) of the record's place in the stream and its text, under a second secret of the run that is
never written to the channel. Values travel as tagged trees of strings that :func:`parse_records` rebuilds with the
parent's own constructors, checking exact types: anything the harness does not write, and any record changed, made
up, dropped or moved on its way (by a relay that read the nonce in the records themselves), is a
:class:`ProtocolError`.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path

from deepeval_games.infra.sandbox.planning import literal_eval

__all__ = ["BOOTSTRAP", "HARNESS", "TAG_BYTES", "ProtocolError", "Results", "parse_records", "record_tag"]

TAG_BYTES = 16
"""Bytes of a record's tag (written as twice as many hex digits)."""


def record_tag(key: bytes, index: int, body: bytes) -> bytes:
    """The tag of the ``index``-th record (from 0) of a run whose text is ``body``, as the harness writes it."""
    return hashlib.blake2b(b"%d " % index + body, key=key, digest_size=TAG_BYTES).hexdigest().encode()


_HARNESS_PATH = Path(__file__).with_name("child.py")
HARNESS = compile(_HARNESS_PATH.read_text(encoding="utf-8"), str(_HARNESS_PATH), "exec")
"""The child program (:mod:`deepeval_games.infra.sandbox.child`), compiled once; sent marshalled on the child's
stdin."""
# Reads (harness code, payload) from stdin, which is then at EOF. Compiling the harness here once saves
# every run ~2 ms; the child is the same interpreter version (the base of this one), so marshal fits.
BOOTSTRAP = """\
import marshal, posix
def _deepeval_sandbox_boot():
    data = b""
    while chunk := posix.read(0, 1 << 16):
        data += chunk
    code, payload = marshal.loads(data)
    namespace = {"__name__": "_deepeval_sandbox_harness"}
    exec(code, namespace)
    namespace["_harness"](payload)
_deepeval_sandbox_boot()
"""
"""The ``python -c`` program of the child: it runs :data:`HARNESS` on the payload read from stdin."""


class ProtocolError(Exception):
    """The result channel carried something the harness does not write."""


def _leaf(tree: tuple[object, ...], size: int) -> tuple[str, ...]:
    if len(tree) != size or any(type(x) is not str for x in tree):
        raise ProtocolError("malformed leaf")
    return tree  # type: ignore[return-value]


def _decode(tree: object) -> object:
    """Rebuild a value from the harness's tagged tree, with the parent's own constructors."""
    if type(tree) is not tuple or not tree or type(tree[0]) is not str:
        raise ProtocolError("malformed value")
    tag, items = tree[0], tree[1:]
    try:
        if tag == "n":
            _leaf(tree, 1)
            return None
        if tag == "b" and _leaf(tree, 2)[1] in ("0", "1"):
            return tree[1] == "1"
        if tag == "i":
            return int(_leaf(tree, 2)[1], 16)
        if tag == "f":
            return float.fromhex(_leaf(tree, 2)[1])
        if tag == "c":
            _, real, imag = _leaf(tree, 3)
            return complex(float.fromhex(real), float.fromhex(imag))
        if tag == "s":
            return _leaf(tree, 2)[1]
        if tag == "y":
            return bytes.fromhex(_leaf(tree, 2)[1])
        if tag == "l":
            return [_decode(x) for x in items]
        if tag == "t":
            return tuple(_decode(x) for x in items)
        if tag == "S":
            return {_decode(x) for x in items}
        if tag == "F":
            return frozenset(_decode(x) for x in items)
        if tag == "d":
            pairs: list[tuple[object, ...]] = [x if type(x) is tuple and len(x) == 2 else () for x in items]
            return {_decode(k): _decode(v) for k, v in pairs}
    except (ValueError, TypeError, OverflowError) as exc:
        raise ProtocolError(f"malformed value: {exc}") from exc
    raise ProtocolError(f"unknown tag {tag!r}")


def _int_field(value: object) -> int:
    if type(value) is not int:
        raise ProtocolError("malformed index")
    return value


@dataclass
class Results:
    """The child's records, validated."""

    ready: bool = False
    done: bool = False
    load_error: tuple[str, str, str] | None = None
    slots: dict[tuple[int, int], tuple[str, object]] = field(default_factory=dict)


def parse_records(data: bytes, nonce: bytes, key: bytes, slots_per_test: list[int]) -> Results:
    """Validate the records of one run (``slots_per_test``: child values per test); :class:`ProtocolError` if bad.

    ``nonce`` frames every record, ``key`` is the secret of its tag (:func:`record_tag`)."""
    results = Results()
    lines = data.split(b"\n")
    if lines[-1]:
        raise ProtocolError("unterminated record")
    for index, line in enumerate(lines[:-1]):
        head, sep, rest = line.partition(b" ")
        if head != nonce or not sep:
            raise ProtocolError("record without this run's framing")
        tag, sep, body = rest.partition(b" ")
        if not sep or not hmac.compare_digest(tag, record_tag(key, index, body)):
            raise ProtocolError("record changed, made up, dropped or moved on its way")
        if results.done or results.load_error:
            raise ProtocolError("record after the harness finished")
        try:
            record = literal_eval(body.decode("utf-8", "surrogatepass"))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, UnicodeDecodeError) as exc:
            raise ProtocolError("undecodable record") from exc
        if type(record) is not tuple or not record or type(record[0]) is not str:
            raise ProtocolError("malformed record")
        kind = record[0]
        if kind == "ready" and len(record) == 1 and not results.ready:
            results.ready = True
            continue
        if not results.ready:
            raise ProtocolError("record before the harness was ready")
        if kind == "done" and len(record) == 1:
            results.done = True
        elif kind == "load_error" and len(record) == 4:
            results.load_error = _leaf(record[1:], 3)  # type: ignore[assignment]
        elif kind in ("value", "raised", "unsupported") and len(record) in (4, 5):
            slot = (_int_field(record[1]), _int_field(record[2]))
            expected = 0 <= slot[0] < len(slots_per_test) and 0 <= slot[1] < slots_per_test[slot[0]]
            if slot in results.slots or not expected:
                raise ProtocolError("duplicate or unexpected result")
            if kind == "value" and len(record) == 4:
                results.slots[slot] = ("value", _decode(record[3]))
            elif kind != "value" and len(record) == 5:
                results.slots[slot] = (kind, _leaf(record[3:], 2))
            else:
                raise ProtocolError("malformed result")
        else:
            raise ProtocolError(f"unexpected record {kind!r}")
    if results.done and len(results.slots) != sum(slots_per_test):
        raise ProtocolError("results missing")
    return results
