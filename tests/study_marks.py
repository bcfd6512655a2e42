"""The marks of an opt-in study test: the real local model plays a whole study (minutes, not the default suite)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import pytest

from llm_bots.local.server import local_model_available

Test = TypeVar("Test", bound=Callable[..., object])


def local_model_study(what: str, minutes: int) -> Callable[[Test], Test]:
    """Mark a test that plays ``what`` with ``local/smollm2`` (slow, local_model, study): skipped without the model,
    and unless DEEPEVAL_GAMES_STUDIES=1 asks for studies (it takes about ``minutes`` on two cores)."""
    missing = local_model_available("local/smollm2")
    marks = [
        pytest.mark.slow,
        pytest.mark.local_model,
        pytest.mark.study,
        pytest.mark.skipif(missing is not None, reason=missing or ""),
        pytest.mark.skipif(
            os.environ.get("DEEPEVAL_GAMES_STUDIES") != "1",
            reason=f"{what} with the real model takes about {minutes} minutes: set DEEPEVAL_GAMES_STUDIES=1",
        ),
    ]

    def mark(test: Test) -> Test:
        for each in reversed(marks):
            test = each(test)
        return test

    return mark
