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
