"""``python -m aeval.deployments.cli``: the `aeval` program."""

from aeval.deployments.cli.program import run

run()
