"""The Ray executor (``deepeval-games run ... --executor ray``): the run's schedule played on a Ray cluster.

The driver (the process that runs ``deepeval-games run``) plans the matches, reads the store for what is already
committed, and remains the store's only writer: it holds the run directory's ``run.lock`` as for any run. Matches
are played by Ray *async actors*, each wrapping the worker-side class of the process executor
(:class:`deepeval_games.app.execution.worker_side.MatchWorker`, one asyncio loop playing many matches); the driver
awaits their ``ObjectRef``\\ s in its own asyncio loop and commits each finished record as it arrives. The same plan,
the same match ids and the same records as a local run; a run interrupted under Ray resumes with or without it.

Where Ray runs: ``address`` names a cluster (``ray start --head`` prints it; ``auto`` joins the one started on this
machine); without one, ``RAY_ADDRESS`` is used when set, else a local Ray instance is started for the run and shut
down after it. When Ray is already initialised in this process (a notebook, a test), that connection is used and
left open.

Per-model limits (``max_concurrency``, ``rpm``, ``tpm``: :mod:`llm_bots.transport.limits`) and the run's budget are
kept by
one services actor on the driver's node; each match actor installs a limiter proxy that asks it, so the limits hold
across the cluster. An actor that dies mid-match is restarted by Ray; its matches in flight come back to the runner
as :class:`InfrastructureError` and are rescheduled.

What the actors need from the driver's environment is passed to them and set in their process before anything
reads it (:func:`forwarded_env`): the ``DEEPEVAL_GAMES_*`` settings (data folder, offline mode, sandbox memory
mode), the variables named by the players' ``api_key_env`` and the provider variables of each model string. (A
``runtime_env`` with ``env_vars`` would do the same, but makes Ray start fresh worker processes: about 2 s more per
run on two cores.)

Ray is an optional extra (``pip install "deepeval-games[ray]"``): nothing here imports it before a run asks for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from deepeval_games.app.execution.process_executor import add_counters, encode_planned, raise_for_result
from deepeval_games.app.spec.schedule import PlannedMatch
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.core.errors import DeepEvalError, FatalRunError, InfrastructureError, SpecError
from deepeval_games.core.records import MatchRecord
from llm_bots.model_info import is_local

__all__ = [
    "RAY_INSTALL_HINT",
    "RayCluster",
    "RayExecutor",
    "check_ray_address",
    "check_ray_run",
    "forwarded_env",
    "require_ray",
]

log = logging.getLogger(__name__)

RAY_INSTALL_HINT = 'pip install "deepeval-games[ray]"'
"""How to install Ray for ``--executor ray``."""

ACTOR_START_TIMEOUT_S = 600.0
"""How long the actors may take to start (a cluster that scales up adds nodes in minutes) before the run stops."""

_FORWARDED_PREFIXES = ("DEEPEVAL_GAMES_",)
"""Driver environment variables every actor gets (data folder, offline mode, sandbox settings)."""


def require_ray() -> ModuleType:
    """The ``ray`` module, or a :class:`DeepEvalError` that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise DeepEvalError(
            f"--executor ray needs Ray, which is not installed here ({exc}); install it with: {RAY_INSTALL_HINT}"
        ) from None
    return ray


def check_ray_run(spec: ExperimentSpec) -> None:
    """What a run under ``executor = "ray"`` needs, checked before anything is written: Ray installed, no person
    at the table (a person plays at this terminal) and no ``local/`` model (its llama.cpp server belongs to one
    process).

    Raises:
        DeepEvalError: Ray is not installed (the message says how to install it).
        SpecError: the spec cannot run on Ray.
    """
    require_ray()
    check_ray_address(spec.experiment.ray_address or os.environ.get("RAY_ADDRESS") or None)
    if spec.has_humans():
        raise SpecError(
            'executor = "ray": a person at the table (a human seat or judge) plays at this terminal, not on a '
            "cluster; run without --executor ray"
        )
    seats = (*spec.players, *([spec.judge] if spec.judge is not None else []))
    local = sorted({p.model for p in seats if p.model is not None and is_local(p.model)})
    if local:
        raise SpecError(
            f'executor = "ray": {", ".join(local)} runs in a llama.cpp server of this process; run local models '
            "without --executor ray, or serve them over HTTP (api_base) so that actors can reach them"
        )


def check_ray_address(address: str | None, *, timeout_s: float = 5.0) -> None:
    """A cluster address (``host:port``, ``ray://host:port``) answers on its port within ``timeout_s`` (Ray itself
    would wait minutes for a wrong one); ``auto``, ``local`` and None are left to Ray.

    Raises:
        DeepEvalError: the address is malformed or nothing answers there.
    """
    if address is None or address in ("auto", "local"):
        return
    where = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = where.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise DeepEvalError(f"Ray address {address!r}: expected host:port (as 'ray start --head' prints it) or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise DeepEvalError(
            f"cannot reach the Ray cluster at {address} ({exc}); start it with 'ray start --head' on the head node, "
            "or leave out --ray-address for a local Ray instance"
        ) from None


def forwarded_env(
    api_key_envs: Iterable[str], models: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment variables the actors get from the driver (those set in ``environ``, default ``os.environ``).

    ``DEEPEVAL_GAMES_*`` (data folder, offline mode, sandbox settings), the variables named by the players'
    ``api_key_env``, and for each model string ``provider/name`` the variables of that provider (``OPENAI_*`` for
    ``openai/gpt-4o``: its key, base URL, organisation). Nothing else leaves the driver's machine.
    """
    env = os.environ if environ is None else environ
    prefixes = set(_FORWARDED_PREFIXES)
    for model in models:
        provider, sep, _ = model.partition("/")
        if sep and provider and provider != "local":
            prefixes.add(provider.upper().replace("-", "_") + "_")
    names = {name for name in env if name.startswith(tuple(prefixes))}
    names.update(api_key_envs)
    return {name: env[name] for name in sorted(names) if env.get(name)}


class RayCluster:
    """A connection to Ray for one run: joins ``address`` (or ``RAY_ADDRESS``), or starts a local instance.

    Used as a context manager: a Ray instance it started (or a connection it opened) is shut down on exit; a
    connection that existed before is left open.
    """

    def __init__(self, address: str | None = None) -> None:
        """A connection (opened by :meth:`open`) to ``address``; None: ``RAY_ADDRESS``, else a local instance."""
        self.address = address
        self.ray = require_ray()
        self._owned = False

    def open(self) -> RayCluster:
        """Connect (see the class).

        Raises:
            DeepEvalError: Ray cannot start or the cluster cannot be reached.
        """
        ray = self.ray
        if ray.is_initialized():
            return self
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        kwargs: dict[str, Any] = {"log_to_driver": True, "configure_logging": False}
        if address is None:  # a local instance of this run's own: no dashboard, nothing left behind
            kwargs.update(address="local", include_dashboard=False)
        else:
            kwargs.update(address=address)
        try:
            ray.init(**kwargs)
        except Exception as exc:  # ConnectionError, ValueError, RuntimeError...: say where and why
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            hint = ""
            if address not in (None, "auto") and not os.environ.get("RAY_AUTH_MODE"):
                hint = (
                    "; if the cluster uses token authentication (ray start turns it on from Ray 2.59), set "
                    "RAY_AUTH_MODE=token and give its token (RAY_AUTH_TOKEN, or ~/.ray/auth_token as "
                    "'ray get-auth-token' on the head prints it)"
                )
            raise DeepEvalError(f"cannot start or join {where}: {first}{hint}") from exc
        self._owned = True
        log.info("Ray: %s", "local instance started" if address is None else f"joined {address}")
        return self

    def close(self) -> None:
        """Shut down the connection this object opened (nothing if Ray was initialised before)."""
        if self._owned:
            self._owned = False
            self.ray.shutdown()

    def __enter__(self) -> RayCluster:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def node_id(self) -> str:
        """The Ray node id of this (the driver's) machine."""
        return str(self.ray.get_runtime_context().get_node_id())

    def cpus(self) -> int:
        """The cluster's CPUs (at least 1)."""
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))


# -- the actors ---------------------------------------------------------------------------------------------------


class _RunServices:
    """What every actor of a run shares, hosted once on the driver's node: the per-model limits of model calls
    (a :class:`llm_bots.transport.limits.LocalLimiter`, so ``max_concurrency``, ``rpm`` and ``tpm`` hold across the
    cluster)
    and the run's budget (USD)."""

    def __init__(self, budget_usd: float | None) -> None:
        from llm_bots.transport.limits import LocalLimiter
        from llm_bots.transport.results import Budget

        self.limiter = LocalLimiter()
        self.budget = Budget(budget_usd) if budget_usd is not None else None

    async def acquire(self, key: str, limits: Any, est_tokens: int = 0) -> tuple[Any, float]:
        """:meth:`LocalLimiter.acquire`, and the run's total spent so far (each call that starts brings its actor
        news of what the others spent)."""
        grant = await self.limiter.acquire(key, limits, est_tokens)
        return grant, self.budget.spent_usd if self.budget is not None else 0.0

    async def release(
        self, grant: Any, used_tokens: int | None = None, rate_limited: bool = False, retry_after_s: float | None = None
    ) -> None:
        """:meth:`LocalLimiter.release`."""
        self.limiter.release_nowait(grant, used_tokens, rate_limited, retry_after_s)

    async def snapshot(self, key: str) -> dict[str, Any]:
        """:meth:`LocalLimiter.snapshot`."""
        return self.limiter.snapshot(key)

    async def charge(self, cost_usd: float) -> float:
        """Charge one call's cost; the run's total spent so far."""
        if self.budget is None:
            return 0.0
        self.budget.charge(cost_usd)
        return self.budget.spent_usd

    async def spent(self) -> float:
        """The run's total spent so far."""
        return self.budget.spent_usd if self.budget is not None else 0.0


class _LimiterProxy:
    """An actor's limiter (:class:`llm_bots.transport.limits.Limiter`): every acquire and release goes to the run's
    :class:`_RunServices` actor, so the limits hold across every actor of the cluster.

    With every grant comes the run's total spent, handed to ``on_spent(total, key)``; when that raises (the budget
    is spent: :class:`llm_bots.transport.errors.BudgetExceeded`), the grant is handed back and the call does not
    start. So a call waiting for its turn never starts on a budget that others spent meanwhile."""

    def __init__(self, services: Any, on_spent: Callable[[float, str], None]) -> None:
        self.services = services
        self.on_spent = on_spent

    async def acquire(self, key: str, limits: Any, est_tokens: int = 0) -> Any:
        """Wait for the run's limiter to let a call under ``key`` start."""
        grant, spent = await self.services.acquire.remote(key, limits, est_tokens)
        try:
            self.on_spent(float(spent), key)
        except BaseException:
            self.services.release.remote(grant, None, False, None)
            raise
        return grant

    async def release(
        self, grant: Any, used_tokens: int | None = None, rate_limited: bool = False, retry_after_s: float | None = None
    ) -> None:
        """Hand ``grant`` back (without waiting for the answer: the order of calls to one actor is kept)."""
        self.services.release.remote(grant, used_tokens, rate_limited, retry_after_s)


class _MatchActor:
    """A Ray async actor around :class:`~deepeval_games.app.execution.worker_side.MatchWorker`: many matches in its
    event loop."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        modules: list[str],
        budget_usd: float | None,
        services: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        os.environ.update(env or {})  # the driver's settings and keys (forwarded_env), before anything reads them
        if cwd and os.path.isdir(cwd):  # relative paths of the spec (cache, data_dir) as the driver reads them
            os.chdir(cwd)
        import ray

        from deepeval_games.app.execution.process_executor import MatchWorker

        # the run's services actor, by name (a handle among the arguments would keep a restarted actor from its
        # arguments: Ray stores such arguments in the object store)
        self._services = ray.get_actor(services) if services is not None else None
        self._pending: set[asyncio.Task[None]] = set()
        # per-model limits held by the run's services actor, not per actor
        limiter = _LimiterProxy(self._services, self._learn_spent) if self._services is not None else None
        charge = self._charge if self._services is not None and budget_usd is not None else None
        self.worker = MatchWorker(spec, modules=modules, budget_usd=budget_usd, on_charge=charge, limiter=limiter)

    def _learn_spent(self, spent_usd: float, key: str) -> None:
        """The run's total spent, learnt as a call under ``key`` is granted; raises ``BudgetExceeded`` when the
        budget is spent (the call must not start)."""
        budget = self.worker.runtime.budget if self.worker.runtime is not None else None
        if budget is None:
            return
        self.worker.update_budget(spent_usd)
        budget.check(key.split(" ", 1)[0])

    async def ready(self) -> int:
        """The actor's process id, once it is built (its first call)."""
        return os.getpid()

    async def play(self, planned: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`MatchWorker.play`, with this actor's model-call counters so far under ``counters``."""
        result = await self.worker.play(planned)
        result["counters"] = self.worker.counters()
        return result

    async def counters(self) -> dict[str, Any]:
        """:meth:`MatchWorker.counters`."""
        return self.worker.counters()

    async def close(self) -> None:
        """Close the worker's cache and model servers."""
        self.worker.close()

    def _charge(self, cost_usd: float) -> None:
        """Report a call's cost to the run's budget; learn the run's total when the answer comes."""
        services = self._services
        if services is None:
            return
        ref: Any = services.charge.remote(cost_usd)

        async def learn() -> None:
            try:
                self.worker.update_budget(float(await ref))
            except Exception:  # the services actor is gone: the run is ending
                log.debug("budget update lost", exc_info=True)

        task = asyncio.get_running_loop().create_task(learn())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)


# -- the driver side ----------------------------------------------------------------------------------------------


@dataclass
class _Slot:
    index: int
    actor: Any
    in_flight: int = 0
    counters: dict[str, Any] = field(default_factory=dict)
    generation: int = 0
    """Deaths of this actor seen so far: every match in flight when it dies fails, but it died once."""


class RayExecutor:
    """Plays a run's matches in Ray actors (see the module docstring); the driver commits.

    The same contract as :class:`~deepeval_games.app.execution.process_executor.ProcessExecutor`: an async context
    manager whose
    ``play(planned)`` returns the record or raises as one process would (an actor that dies mid-match raises
    :class:`InfrastructureError`, so the runner reschedules the match; Ray restarts the actor). On leaving, the
    actors' model-call counters are added to ``runtime`` and the actors are stopped.
    """

    def __init__(
        self,
        spec: ExperimentSpec,
        runtime: Any,
        *,
        address: str | None = None,
        actors: int | None = None,
        modules: Iterable[str] = (),
        matches: int | None = None,
    ) -> None:
        """An executor for ``spec`` on the cluster at ``address`` (see :class:`RayCluster`).

        ``actors``: how many actors (default: the cluster's CPUs, at most ``matches``); ``runtime``: the driver's
        model runtime (or None); ``modules``: modules the actors import first (:func:`executors.spec_modules`).
        """
        self.spec = spec
        self.runtime = runtime
        self.cluster = RayCluster(address)
        self.requested = actors
        self.matches = matches
        self.modules = list(modules)
        self.deaths = 0
        self.max_deaths = 0
        self._slots: list[_Slot] = []
        self._finished: list[dict[str, Any]] = []
        self._services: Any = None
        self._services_name: str | None = None

    async def __aenter__(self) -> RayExecutor:
        self.cluster.open()
        try:
            await self._start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _start(self) -> None:
        ray = self.cluster.ray
        cpus = self.cluster.cpus()
        count = self.requested or cpus
        if self.matches is not None:
            count = min(count, max(1, self.matches))
        self.max_deaths = 2 * count + self.spec.max_match_attempts
        models = self.spec.uses_models()
        budget = self.spec.budget_usd if models else None
        if models:  # the run's limits and budget, on the driver's node
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = NodeAffinitySchedulingStrategy(node_id=self.cluster.node_id(), soft=False)
            self._services_name = f"deepeval-games-services-{uuid.uuid4().hex}"
            services = ray.remote(_RunServices).options(
                name=self._services_name, num_cpus=0, max_concurrency=10_000, scheduling_strategy=here
            )
            self._services = services.remote(budget)
        seats = (*self.spec.players, *([self.spec.judge] if self.spec.judge is not None else []))
        env = forwarded_env(
            [str(p.params["api_key_env"]) for p in seats if p.params.get("api_key_env")],
            [p.model for p in seats if p.model is not None],
        )
        actor_class = ray.remote(_MatchActor).options(
            num_cpus=min(1.0, cpus / count),  # more actors than CPUs (--workers N) share them
            max_restarts=-1,  # a dead actor comes back (its matches in flight are rescheduled by the runner)
            max_concurrency=10_000,  # the runner bounds the matches in flight
        )
        self._slots = [
            _Slot(
                index,
                actor_class.remote(self.spec.source, self.modules, budget, self._services_name, env, os.getcwd()),
            )
            for index in range(count)
        ]
        try:  # every actor built: a spec or module that cannot load in an actor stops the run here
            ready = asyncio.gather(*(slot.actor.ready.remote() for slot in self._slots))
            await asyncio.wait_for(ready, timeout=ACTOR_START_TIMEOUT_S)
        except ray.exceptions.RayError as exc:
            raise FatalRunError(f"a Ray actor could not start: {_first_line(exc)}") from None
        except asyncio.TimeoutError:
            raise FatalRunError(
                f"{count} Ray actors were not all running after {ACTOR_START_TIMEOUT_S:.0f} s (the cluster has "
                f"{cpus} CPUs; see 'ray status'); nothing was played"
            ) from None
        log.info("Ray: %d actors ready", count)

    async def play(self, planned: PlannedMatch) -> MatchRecord:
        """Play ``planned`` in an actor; its record, or its failure raised as in one process."""
        ray = self.cluster.ray
        slot = min(self._slots, key=lambda s: s.in_flight)
        slot.in_flight += 1
        generation = slot.generation
        try:
            result = await slot.actor.play.remote(encode_planned(planned))
        except ray.exceptions.RayActorError as exc:
            if generation == slot.generation:  # the first of its matches to report this death
                slot.generation += 1
                self.deaths += 1
                if slot.counters:  # the counters of the incarnation that died
                    self._finished.append(slot.counters)
                    slot.counters = {}
            if self.deaths >= self.max_deaths:
                raise FatalRunError(
                    f"Ray actors died {self.deaths} times; the run stops (committed matches are kept: run again "
                    f"to resume). Last: {_first_line(exc)}"
                ) from None
            raise InfrastructureError(
                f"Ray actor {slot.index} died while playing match {planned.match_id}: {_first_line(exc)}"
            ) from None
        finally:
            slot.in_flight -= 1
        counters = result.pop("counters", None)
        if counters and generation == slot.generation:
            slot.counters = counters
        return raise_for_result(result)

    async def close(self) -> None:
        """Collect the actors' counters into the runtime, stop the actors, and leave Ray (if this run joined it)."""
        ray = self.cluster.ray
        if self._slots:
            refs = [slot.actor.counters.remote() for slot in self._slots]
            for slot, ref in zip(self._slots, refs, strict=True):
                try:
                    self._finished.append(await ref)
                except ray.exceptions.RayError:
                    if slot.counters:
                        self._finished.append(slot.counters)
            closing = [slot.actor.close.remote() for slot in self._slots]
            await asyncio.gather(*closing, return_exceptions=True)
            for slot in self._slots:
                ray.kill(slot.actor, no_restart=True)
            self._slots = []
        if self._services is not None:
            ray.kill(self._services, no_restart=True)
            self._services = None
        add_counters(self.runtime, self._finished)
        self._finished = []
        self.cluster.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
