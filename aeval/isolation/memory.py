"""The case's memory limit, as a verdict can say it (issue 44, item 4).

A case declares its memory budget (eval.config ``max_memory_mb``, default 8 GiB); the sandbox
enforces it twice: RLIMIT_DATA per process (an allocation past it is refused) and, where a
memory cgroup can be made, the memory of all the attempt's processes together (past it the
kernel's OOM killer SIGKILLs one of them). Either way the case went over the budget it
declared: the case **fails** with `memory_reason` ("killed at the case's memory limit of N
MiB"), like the disk bound, and the verdict is never reused by a sweep (`is_memory_kill`):
what memory a run takes also depends on the machine's libraries and page cache, so the next
sweep measures again. It is told apart by evidence only, never by a bare status:

- the cgroup: its ``oom_kill`` counter rose while the command ran (``memory.oom_control``
  under cgroup v1, ``memory.events`` under v2);
- RLIMIT_DATA: the command failed and its standard error ends an allocation refused the way
  runtimes report it (`refused_allocation`). A bare SIGKILL or SIGSEGV says nothing about
  who sent it and is not read as the limit.
"""

from __future__ import annotations

MEMORY_KILL = "killed at the case's memory limit of"

# what a runtime prints when an allocation is refused (matched per line, in plain text)
REFUSALS = ("Cannot allocate memory", "std::bad_alloc", "JavaScript heap out of memory",
            "Fatal process out of memory", "failed to allocate memory")


def memory_reason(limit_bytes: int, evidence: str) -> str:
    """What a case stopped at its memory limit says, with the evidence that showed it."""
    return (f"{MEMORY_KILL} {limit_bytes >> 20} MiB ({evidence}; eval.config's "
            f"max_memory_mb raises it)")


def is_memory_kill(reason: str | None) -> bool:
    """Whether a case's reason says it was stopped at its memory limit (never reused)."""
    return bool(reason) and MEMORY_KILL in reason


def refused_allocation(stderr: str, tail_lines: int = 40) -> str | None:
    """The line of ``stderr`` (its last ``tail_lines``) that reports a refused allocation, or
    None: a Python ``MemoryError`` (or a subclass such as numpy's ``_ArrayMemoryError``)
    ending a traceback, ``Cannot allocate memory`` (ENOMEM), C++'s ``std::bad_alloc``, V8's
    heap or process out of memory, Rust's ``memory allocation of N bytes failed``. Plain
    string tests, linear in the text."""
    for line in stderr.splitlines()[-tail_lines:]:
        text = line.strip()
        head = text.split(":", 1)[0]
        if head.endswith("MemoryError") and " " not in head:
            return text[:200]
        if any(r in text for r in REFUSALS):
            return text[:200]
        if text.startswith("memory allocation of ") and text.endswith("bytes failed"):
            return text[:200]
    return None
