"""Settings from the environment (``AEVAL_*``), overridden by command-line flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AEVAL_", extra="ignore")

    home: Path = Field(Path(".aeval"), description="Run store root (AEVAL_HOME).")
    model: str | None = Field(None, description="Executor model, a litellm model string. With "
                                                "none, the `literal` runtime is used.")
    grader_model: str | None = Field(None, description="Grader model; defaults to `model`.")
    api_base: str | None = Field(None, description="Model API base URL override.")
    concurrency: int = Field(4, ge=1, description="Case chains run at once.")
    model_concurrency: int = Field(4, ge=1, description="Model calls in flight at once.")
    retries: int = Field(2, ge=0, description="Retries of a case after a transient error.")
    model_retries: int = Field(6, ge=0, description="Per-call retries of transient model-API "
                                                    "errors within one case, before the case "
                                                    "is retried.")
    model_retry_wait_s: float = Field(120.0, ge=0, description="Most seconds one case spends "
                                                               "waiting between per-call "
                                                               "retries.")
    retry_delay_s: float = Field(2.0, ge=0, description="First retry delay; doubles each time "
                                                        "(with jitter).")
    keep_workspaces: bool = Field(False, description="Keep attempt workspaces for debugging.")
    sandbox: Literal["auto", "require", "none"] = Field(
        "auto", description="bubblewrap around every command of a case: auto (fall back to "
                            "none with a warning), require (refuse to run without), none.")
    output_cap: int = Field(16_000, gt=0, description="Characters kept of one tool output.")
    min_tested: int = Field(0, ge=0, description="Case runs `aeval run` and `sweep` must test "
                                                 "(passed or failed); fewer is exit 5 "
                                                 "(--min-tested).")
