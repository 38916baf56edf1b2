"""The sandbox: one place that decides how every process a case starts is isolated.

Setup, preflight, steps, the agent's bash tool, ``command`` checks and the third-party
runtime CLIs all run through a `Sandbox`. Implementations live in ``adapters/sandbox/bwrap.py``:
``bwrap`` (bubblewrap: an allowlisted view of the host, where only what the policy shows
exists, only the attempt root writable, a private network namespace always, its own PID
namespace so that ending the command ends every descendant) and ``none`` (the unsandboxed
behaviour: a process group, killed at the end).

The domain only states the policy and the interface; it starts nothing itself. It owns the
command runner (`aeval.isolation.shell`), never the other way round: a sandbox returns the runner's
`CommandResult`, and the runner takes anything with a ``run`` method.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from aeval.isolation.shell import CommandResult

if TYPE_CHECKING:
    from aeval.isolation.redact import Redactor

SandboxMode = Literal["auto", "require", "none"]
GIB = 1 << 30


class SandboxPolicy(BaseModel):
    """What a sandboxed process may see, write and use. One policy per attempt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    root: Path = Field(
        description="The attempt root (holding workspace/, home/, tmp/): the only host folder "
                    "a sandboxed process can write. Also where the per-attempt Python "
                    "environment is made, so an install lands in the attempt and dies with it.")
    writable: list[Path] = Field(
        default_factory=list,
        description="Further host folders bound writable (e.g. a runtime's private config "
                    "home outside the attempt root).")
    shown: list[Path] = Field(
        default_factory=list,
        description="Further host paths shown read-only at their own place, beside the "
                    "system trees, the toolchain and the attempt (the host tools a case "
                    "declares, resolved to where they live: their install prefix is shown). "
                    "Nothing that is not shown exists inside.")
    readonly: list[Path] = Field(
        default_factory=list,
        description="Further host folders shown read-only at their own place and nothing "
                    "more (not on PATH): the wheelhouse the provisioning phase fetched.")
    pinned: list[Path] = Field(
        default_factory=list,
        description="Folders inside the attempt root bound at their own place, so that inside "
                    "they cannot be renamed, moved aside or removed (the skill copy: Δ is "
                    "taken at its path).")
    network: bool = Field(
        False, description="Outbound access from the sandbox's private network namespace "
                           "(through a user-mode network stack; the host's loopback and its "
                           "own addresses stay unreachable). False: only a private loopback.")
    memory_bytes: int | None = Field(
        8 * GIB, gt=0,
        description="Private writable memory (RLIMIT_DATA) each sandboxed process may "
                    "allocate, and, where a memory cgroup can be made, the memory of all the "
                    "attempt's processes together; None: no limit. Reserved address space is "
                    "not counted.")
    max_file_bytes: int | None = Field(
        16 * GIB, gt=0,
        description="Largest file a sandboxed process may write (RLIMIT_FSIZE), sparse files "
                    "included: past it a write fails (EFBIG). None: no limit.")
    max_disk_bytes: int | None = Field(
        10 * GIB, gt=0,
        description="What the attempt may hold on disk while a command runs: the blocks "
                    "allocated under `root` and `writable` plus the command's private /tmp "
                    "(a tmpfs of this size). Over it the command's process tree is killed and "
                    "the case fails: `wrote more than N`. None: no limit.")
    max_processes: int | None = Field(
        1024, gt=0,
        description="RLIMIT_NPROC of sandboxed processes. The kernel does not enforce it for "
                    "root; the PID namespace still ends them all with the command.")
    output_cap: int = Field(
        16_000, gt=0, description="Characters of each output stream kept (head and tail).")


class SandboxStatus(BaseModel):
    """Which sandbox a run uses and why: recorded in eval_metadata.json and reports."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requested: SandboxMode = Field(description="--sandbox as given: auto, require or none.")
    used: Literal["bwrap", "none"] = Field(description="The sandbox actually in force.")
    reason: str | None = Field(
        None, description="Why the sandbox is `none` when more was asked for (or 'requested').")


class SandboxUnavailable(Exception):
    """``--sandbox require`` was given and bubblewrap cannot run here (a usage error)."""


@runtime_checkable
class Sandbox(Protocol):
    """How a command of a case runs. ``run`` for a shell command with captured output,
    ``argv`` to wrap a long-running program (codex, opencode, claude) whose process the
    caller starts itself, so that its whole process tree runs inside."""

    name: ClassVar[str]
    policy: SandboxPolicy
    status: SandboxStatus  # what to record: used, requested, and why not bwrap
    exceeded: str | None  # the first bound a command went over: "wrote more than 64 MiB"

    def run(self, command: str, cwd: Path, env: dict[str, str], timeout_s: float,
            cap: int = 16_000, *, redactor: Redactor | None = None) -> CommandResult:
        """Run ``command`` with bash -e -o pipefail; kill every descendant at the timeout, over
        the disk bound, and when it returns; output capped while read and redacted before it
        is cut."""

    def argv(self, argv: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
        """The command line that runs ``argv`` inside the sandbox, in ``cwd``, with ``env``
        (start it with ``env`` as its environment too)."""
