"""The error tree. Which branch an exception sits on decides what happens to a case.

    AevalError
    ├── ContractError             the skill or its eval.config cannot be loaded -> skill `invalid`
    ├── EnvironmentFailure        not the skill's fault -> case `error`, never `fail`
    │   ├── TransientError        may succeed on a fresh attempt -> retried
    │   │   ├── ModelTransientError   429 / 408 / 409 / 5xx / overloaded / connection / timeout
    │   │   └── PreflightFailed       a declared preflight command failed
    │   ├── MissingCredential     a required credential is not set in the environment
    │   ├── RuntimeUnavailable    the runtime's SDK or CLI is not installed, or cannot run this case
    │   └── ModelPermanentError   auth, bad request, context window: retrying cannot help
    └── GraderProtocolError       the grader's answer stayed invalid -> case `error`, fidelity false

Tool failures inside an agent's run are *evidence* (they become first-attempt errors), never
exceptions. Only `TransientError` is retried; a skill defect is never retried.
"""

from __future__ import annotations

from dataclasses import dataclass


class AevalError(Exception):
    """Base of every error aeval raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One bad thing about an input, printed as ``path:field: message``."""

    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.field}: {self.message}" if self.field else (
            f"{self.path}: {self.message}"
        )


class ContractError(AevalError):
    """A skill or its contract cannot be loaded. Carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    def __reduce__(self):  # survives pickling (Dask workers, Prefect results)
        return (type(self), (self.problems,))


class EnvironmentFailure(AevalError):
    """The environment, not the skill, stopped the case. The case ends `error`."""


class TransientError(EnvironmentFailure):
    """A failure that may not happen again on a fresh attempt. The only retried error."""


class ModelTransientError(TransientError):
    """The model API answered 429, 408, 409, 5xx or overloaded; or the connection failed."""

    def __init__(self, message: str, status_code: int | None = None):
        self.status_code = status_code
        super().__init__(message)


class PreflightFailed(TransientError):
    """A preflight command of the case failed: a service is unreachable, a device is missing."""


class KilledFromOutside(TransientError):
    """A process of the case was killed by a signal no process of the case or aeval sent (an
    operator's ``kill -9``, the host's OOM killer): the environment, retried, never reused."""


class MissingCredential(EnvironmentFailure):
    """A credential the case declares in `required_credentials` is not set."""


class RuntimeUnavailable(EnvironmentFailure):
    """The runtime cannot run here: SDK or CLI missing, or the case lacks what it needs."""


class ModelPermanentError(EnvironmentFailure):
    """The model API refused for a reason a retry cannot fix (auth, bad request, context window)."""


class GraderProtocolError(AevalError):
    """The grader's answer did not validate against the grading model, even after retries."""


class GateFailed(AevalError):
    """A run's gate was not 0: what a served MR flow run fails with (its exit code and run)."""

    def __init__(self, message: str, exit_code: int, run_id: str, manifest: object = None):
        self.exit_code, self.run_id, self.manifest = exit_code, run_id, manifest
        super().__init__(message)

    def __reduce__(self):  # survives pickling (Prefect results)
        return (type(self), (str(self), self.exit_code, self.run_id, self.manifest))


def yaml_error_text(exc: BaseException, line_offset: int = 0) -> str:
    """A PyYAML syntax error as one line that names its own place: ``line 4, column 1: found
    character '\\t' that cannot start any token`` (``line_offset``: lines of the file before
    the YAML text, as for frontmatter). PyYAML's own message spans several lines and quotes
    the source; this keeps the problem, and the context when it says what was being read."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
    context = " ".join(str(getattr(exc, "context", None) or "").split())
    where = f"line {mark.line + 1 + line_offset}, column {mark.column + 1}: " if mark else ""
    return f"{where}{problem}" + (f" ({context})" if context else "")
