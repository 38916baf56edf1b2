"""What every forge's pull or merge request diff looks like to delivery: one file's diff as
unified hunks. The GitLab and GitHub adapters both return these, so the delivery plan (which
suggestion goes inline, which to the fallback) is one piece of code for both."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from aeval.errors import AevalError


class ForgeError(AevalError):
    """A forge call failed after its client library's own retries, or cannot be made at all."""

    def __init__(self, message: str, status_code: int | None = None):
        self.status_code = status_code
        super().__init__(message)

    @property
    def transient(self) -> bool:
        """Worth another try later: no answer, 429, or a server error."""
        return self.status_code is None or self.status_code == 429 or self.status_code >= 500


class ForgeConfigError(ForgeError):
    """What to post to is not known, or must not be posted to (no token, no merge or pull
    request, ...): a usage error, never worth another try."""

    @property
    def transient(self) -> bool:
        return False


class FileDiff(BaseModel):
    """One file of a merge / pull request diff."""

    model_config = ConfigDict(extra="forbid")

    old_path: str
    new_path: str
    diff: str = Field("", description="Unified diff hunks (no ---/+++ header); empty when "
                                      "the forge collapsed the file or it is binary.")
    new_file: bool = False
    renamed_file: bool = False
    deleted_file: bool = False
