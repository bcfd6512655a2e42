"""The llama.cpp server process of a local model: ``python -m llm_bots.local.serve OPTIONS``, started by
:class:`llm_bots.local.server.LocalModelServer` (one process a server), never imported by the evaluator.

``OPTIONS`` is one JSON object: the GGUF file (``path``), the model id the server reports (``alias``), the context
window (``n_ctx``), the slots (``n_parallel``), the CPU threads (``n_threads``) and the sampling seed (``seed``). The
process serves ``xllamacpp.Server`` on 127.0.0.1 at a free port, writes ``{"address": "http://127.0.0.1:<port>"}`` as
one line to its stdout, and serves until its stdin closes (the parent closed the pipe or died). It ignores Ctrl-C (the
parent decides when it stops; Ctrl-C hits the whole process group) and exits on SIGTERM.

It imports only the standard library and ``xllamacpp`` (``python -m`` first imports its packages' ``__init__``
modules, which import nothing).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import Any

__all__ = ["main"]


def _term(signum: int, frame: FrameType | None) -> None:
    """SIGTERM: exit (through the ``finally`` of :func:`main`)."""
    raise SystemExit(0)


def _params(xlc: Any, opts: Mapping[str, Any]) -> Any:
    """The server's parameters (``xllamacpp.CommonParams``) from the options."""
    params = xlc.CommonParams()
    params.model.path = opts["path"]
    params.model_alias = {opts["alias"]} if isinstance(params.model_alias, (set, frozenset)) else opts["alias"]
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = opts["n_ctx"]
    params.n_parallel = opts["n_parallel"]
    params.n_batch = min(params.n_batch, opts["n_ctx"]) if params.n_batch > 0 else opts["n_ctx"]
    params.cpuparams.n_threads = opts["n_threads"]
    params.cpuparams_batch.n_threads = opts["n_threads"]
    params.n_threads_http = 2
    params.sampling.seed = opts["seed"]
    params.warmup = False
    params.ui = False
    return params


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the model the options (``argv[0]``, else the first command-line argument) name until stdin closes;
    never returns (the process ends with ``os._exit``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop (Ctrl-C hits the whole group)
    signal.signal(signal.SIGTERM, _term)
    opts = json.loads((sys.argv[1:] if argv is None else argv)[0])
    import xllamacpp as xlc

    server = xlc.Server(_params(xlc, opts))
    try:
        sys.stdout.write(json.dumps({"address": server.listening_address}) + "\n")
        sys.stdout.flush()  # BrokenPipeError when the parent died while we started
        sys.stdin.read()  # returns at EOF: the parent closed the pipe or died
    except BaseException:
        pass
    finally:
        # The C++ destructor stops the HTTP thread and frees the model, but it can wait forever for a main loop that
        # never ran (a parent gone during start-up): never outlive the parent for that, and skip the interpreter's own
        # shutdown, which would run the destructor again.
        threading.Timer(5.0, os._exit, args=(0,)).start()
        del server
        os._exit(0)


if __name__ == "__main__":
    main()
