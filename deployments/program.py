"""The `aeval` program (``[project.scripts]``): the warm process runs the invocation when one
serves it (`aeval.deployments.servers.warm`), else the command line
(`aeval.deployments.cli.main.main`) runs it in this process. It sits above both: the warm
process's children run `aeval.deployments.cli.main.main` too, so the command line does not
import the warm process, and neither imports this module."""

from __future__ import annotations

import sys

from aeval.deployments.cli.main import main


def run() -> None:
    """The `aeval` program: ``main()`` (in the warm process when one serves this invocation),
    then exit without the interpreter's final garbage
    collection over everything Prefect, litellm and pydantic built (3-6 s on its own):
    the objects are frozen once the output is flushed."""
    from aeval.deployments.servers import warm

    argv = sys.argv[1:]
    servable = warm.servable(argv)
    code = warm.delegate(argv) if servable else None  # the warm process ran it
    if code is None:
        code = main(argv)
        if servable and not _server_failed():
            warm.start_later()
    import gc

    gc.freeze()
    sys.exit(code)


def _server_failed() -> bool:
    """The Prefect server this invocation started did not come up: it was stopped, and no
    warm process is started for a machine that could not start it."""
    from aeval.tasks._engine.servers import embedded

    return embedded.failed()
