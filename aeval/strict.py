"""The base of aeval's file formats and of what it reads from others: a pydantic model that
refuses a field it does not declare, so a typo or a drifted format is an error, not a value
silently dropped."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
