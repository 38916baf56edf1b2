"""The Dask preload users name: ``dask worker tls://HOST:PORT --preload aeval.flows.runners``.

The hooks live in aeval's engine (`aeval.tasks._engine.runners`); this module keeps the
name the README and deployments/README.md give users, so a worker started that way keeps
working."""

from aeval.tasks._engine.runners import dask_setup, dask_teardown

__all__ = ["dask_setup", "dask_teardown"]
