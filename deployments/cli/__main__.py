"""``python -m aeval.deployments.cli``: the `aeval` program."""

from aeval.deployments.program import run

run()
