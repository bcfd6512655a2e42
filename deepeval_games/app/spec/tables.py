"""What every table of the experiment spec shares: the tables' pydantic configuration, the non-blank name, and the
validation error whose message is shown as written (it names its table itself)."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, StrictStr
from pydantic_core import PydanticCustomError

__all__ = ["TABLE", "Name", "verbatim_error"]

TABLE = ConfigDict(extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True, allow_inf_nan=False)
"""The configuration of a spec table: strict, closed, frozen, documented by its attribute docstrings."""

Name = Annotated[StrictStr, Field(min_length=1, pattern=r"\S")]
"""A non-blank string."""


def verbatim_error(message: str) -> PydanticCustomError:
    """A validation error whose message is shown as it is (it names its table itself)."""
    return PydanticCustomError("spec", "{message}", {"message": message})
