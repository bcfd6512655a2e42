"""The collector's setting while a run with model players is on (llm_bots.gc_policy, issue 14)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from llm_bots import gc_policy
from llm_bots.llm_bot import ModelRuntime


@pytest.fixture(autouse=True)
def _default_thresholds(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts from CPython's defaults and leaves the process's own setting as it found it."""
    monkeypatch.delenv(gc_policy.ENV_VAR, raising=False)
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)
    yield
    while gc_policy._holders:  # a failed test must not leave the setting held
        gc_policy.release()
    gc.set_threshold(*before)
    if enabled:
        gc.enable()


def test_hold_raises_the_older_thresholds_and_release_restores_them() -> None:
    gc_policy.hold()
    assert gc.get_threshold() == gc_policy.RUN_THRESHOLDS == (700, 100, 100)
    gc_policy.release()
    assert gc.get_threshold() == (700, 10, 10)
    gc_policy.release()  # an extra release does nothing
    assert gc.get_threshold() == (700, 10, 10)


def test_release_makes_the_collections_the_run_put_off() -> None:
    gc.collect()
    gc_policy.hold()
    junk: list[list[int]] = []
    while gc.get_count()[1] <= 10:  # young collections went on; the middle one the defaults would make is due
        junk.extend([] for _ in range(100))
    gc_policy.release()
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_count()[1] <= 10  # collected on the run's time: no backlog for whatever runs next


def test_release_never_forces_a_full_collection() -> None:
    """A full collection walks every object in the process (0.2 s with litellm's tables unfrozen): CPython decides."""
    gc.collect()
    gc_policy.hold()
    for _ in range(gc.get_threshold()[2] + 5):  # the old thresholds would call a full collection due
        gc.collect(1)
    assert gc.get_count()[2] > 10
    made: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            made.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        gc_policy.release()
    finally:
        gc.callbacks.remove(seen)
    assert gc.get_threshold() == (700, 10, 10)
    assert 2 not in made, made


def test_nested_runs_restore_when_the_last_one_ends() -> None:
    with gc_policy.run_policy():
        with gc_policy.run_policy():
            assert gc.get_threshold() == gc_policy.RUN_THRESHOLDS
        assert gc.get_threshold() == gc_policy.RUN_THRESHOLDS
    assert gc.get_threshold() == (700, 10, 10)


def test_the_environment_sets_or_disables_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gc_policy.ENV_VAR, "2000,50,40")
    with gc_policy.run_policy():
        assert gc.get_threshold() == (2000, 50, 40)
    assert gc.get_threshold() == (700, 10, 10)
    for value in ("0", "lots", "1,2", "700,0,10"):
        monkeypatch.setenv(gc_policy.ENV_VAR, value)
        with gc_policy.run_policy():
            assert gc.get_threshold() == (700, 10, 10), value


def test_a_higher_setting_a_disabled_collector_and_a_change_during_the_run_are_left_alone() -> None:
    gc.set_threshold(100_000, 5, 500)
    with gc_policy.run_policy():
        assert gc.get_threshold() == (100_000, 100, 500)  # each threshold is a floor
    assert gc.get_threshold() == (100_000, 5, 500)
    gc.set_threshold(700, 10, 10)
    gc.disable()
    with gc_policy.run_policy():
        assert gc.get_threshold() == (700, 10, 10)
    gc.enable()
    with gc_policy.run_policy():
        gc.set_threshold(900, 10, 10)  # the program set its own during the run: it stays
    assert gc.get_threshold() == (900, 10, 10)


def test_a_model_runtime_holds_the_setting_while_open(tmp_path: object) -> None:
    runtime = ModelRuntime.open(None, None)
    other = ModelRuntime.open(None, 1.0)
    assert gc.get_threshold() == gc_policy.RUN_THRESHOLDS
    runtime.close()
    runtime.close()  # closing twice releases once
    assert gc.get_threshold() == gc_policy.RUN_THRESHOLDS
    other.close()
    assert gc.get_threshold() == (700, 10, 10)
    ModelRuntime().close()  # a runtime made directly (tests, tools) never held it
    assert gc.get_threshold() == (700, 10, 10)
