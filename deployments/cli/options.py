"""A command's effective options, resolved once: its flag when given, else the ``AEVAL_*``
setting (`aeval.settings.Settings`), else the setting's default. The commands read an
`Options`, never ``args.x or settings.x`` each on its own."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a command resolves its options, not by `aeval --help`
    from aeval.settings import Settings


@dataclass(frozen=True)
class Options:
    """What a command runs with. A command without a flag gets the setting (``--sandbox``
    of `aeval sweep`, which has none, is AEVAL_SANDBOX)."""

    settings: Settings
    """Every setting, for those no flag overrides (retries, output cap, model concurrency)."""
    store: Path
    """Run store folder: --out, else AEVAL_HOME (default .aeval)."""
    model: str | None
    """Executor model: --model, else AEVAL_MODEL."""
    models: list[str | None]
    """The executor models of `aeval compare` (--model is repeatable there): one row each;
    elsewhere ``[model]``."""
    api_base: str | None
    """Model API base URL: --api-base, else AEVAL_API_BASE."""
    concurrency: int
    """Case chains (or trials) at once: --concurrency, else AEVAL_CONCURRENCY (default 4)."""
    sandbox: str
    """--sandbox, else AEVAL_SANDBOX (default auto)."""
    keep_workspaces: bool
    """--keep-workspaces, or AEVAL_KEEP_WORKSPACES."""
    named_grader: str | None
    """The grader model named: --grader-model, else AEVAL_GRADER_MODEL; None with --no-grader."""
    no_grader: bool
    """--no-grader: natural-language assertions stay ungraded."""
    min_tested: int
    """--min-tested, else AEVAL_MIN_TESTED (default 0: a run that tested nothing exits 0)."""
    runtimes: list[str]
    """--runtime (repeatable), else the command's default: `aeval run`'s is builtin with a
    model, else literal."""

    @property
    def grader_model(self) -> str | None:
        """The grader of a run: the one named, else the executor model; None with
        --no-grader."""
        return None if self.no_grader else (self.named_grader or self.model)


def resolve(args: argparse.Namespace, default_runtimes: list[str] | None = None) -> Options:
    """The effective options of ``args`` (any command's: a flag it lacks counts as not
    given). ``default_runtimes``: when no --runtime is given (default: builtin with a model,
    else literal, as `aeval run` chooses)."""
    from aeval.settings import Settings

    settings = Settings()

    def flag(name: str):
        return getattr(args, name, None)

    given = flag("model")
    models = list(given) if isinstance(given, list) else [given or settings.model]
    model = models[0]
    no_grader = bool(flag("no_grader"))
    named = flag("grader_model")
    if isinstance(named, list):  # `aeval regrade`'s graders: the list it re-grades with
        named = None
    return Options(
        settings=settings,
        store=Path(flag("out") or settings.home),
        model=model,
        models=models,
        api_base=flag("api_base") or settings.api_base,
        concurrency=flag("concurrency") or settings.concurrency,
        sandbox=flag("sandbox") or settings.sandbox,
        keep_workspaces=bool(flag("keep_workspaces") or settings.keep_workspaces),
        named_grader=None if no_grader else (named or settings.grader_model),
        no_grader=no_grader,
        min_tested=settings.min_tested if flag("min_tested") is None else flag("min_tested"),
        runtimes=list(flag("runtime") or default_runtimes
                      or (["builtin"] if model else ["literal"])),
    )
