"""Constants shared by the command modules."""

EXIT_USAGE = 2
EXIT_INTERNAL = 4  # aeval itself failed (an unexpected exception): a bug to report
EPILOG = """exit codes of `aeval run` (first match wins):
  1  a case failed: a skill defect (blocks the merge)
  2  a usage error, or a skill whose SKILL.md / eval.config cannot be loaded
  3  an environment error (model API, preflight, missing credential): retry, not a defect
  0  every case passed
  4  internal error (aeval itself failed: a bug to report; -v shows the traceback)
"""


def flag_problem(exc: Exception) -> str:
    """A request model's ValidationError as one line naming the command-line flag: the
    request's fields are the flags (``max_turns`` is ``--max-turns``)."""
    errors = getattr(exc, "errors", lambda: [])()
    if not errors:
        return str(exc).splitlines()[0]
    e = errors[0]
    field = str(e["loc"][0]) if e.get("loc") else "?"
    return f"--{field.replace('_', '-')}: {e['msg']}"
