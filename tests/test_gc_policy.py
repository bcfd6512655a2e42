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


def test_hold_raises_the_young_threshold_and_release_restores_it() -> None:
    gc_policy.hold()
    assert gc.get_threshold() == (gc_policy.RUN_GEN0_THRESHOLD, 10, 10)
    gc_policy.release()
    assert gc.get_threshold() == (700, 10, 10)
    gc_policy.release()  # an extra release does nothing
    assert gc.get_threshold() == (700, 10, 10)


def test_release_collects_the_young_generation_on_the_runs_time() -> None:
    gc_policy.hold()
    junk: list[list[int]] = [[] for _ in range(2_000)]  # tracked containers, more than the default threshold
    assert gc.get_count()[0] >= 2_000  # not collected while the run is on
    del junk
    gc_policy.release()
    assert gc.get_count()[0] < 700  # collected before the default came back: no backlog for whatever runs next


def test_nested_runs_restore_when_the_last_one_ends() -> None:
    with gc_policy.run_policy():
        with gc_policy.run_policy():
            assert gc.get_threshold()[0] == gc_policy.RUN_GEN0_THRESHOLD
        assert gc.get_threshold()[0] == gc_policy.RUN_GEN0_THRESHOLD
    assert gc.get_threshold() == (700, 10, 10)


def test_the_environment_sets_or_disables_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gc_policy.ENV_VAR, "12345")
    with gc_policy.run_policy():
        assert gc.get_threshold() == (12345, 10, 10)
    monkeypatch.setenv(gc_policy.ENV_VAR, "0")
    with gc_policy.run_policy():
        assert gc.get_threshold() == (700, 10, 10)
    monkeypatch.setenv(gc_policy.ENV_VAR, "lots")
    with gc_policy.run_policy():
        assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_setting_a_disabled_collector_and_a_change_during_the_run_are_left_alone() -> None:
    gc.set_threshold(100_000, 5, 5)
    with gc_policy.run_policy():
        assert gc.get_threshold() == (100_000, 5, 5)
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
    assert gc.get_threshold()[0] == gc_policy.RUN_GEN0_THRESHOLD
    runtime.close()
    runtime.close()  # closing twice releases once
    assert gc.get_threshold()[0] == gc_policy.RUN_GEN0_THRESHOLD
    other.close()
    assert gc.get_threshold() == (700, 10, 10)
    ModelRuntime().close()  # a runtime made directly (tests, tools) never held it
    assert gc.get_threshold() == (700, 10, 10)
