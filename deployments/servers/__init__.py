"""aeval's long-lived processes: the warm process (`warm`), the reused local Prefect server
(`prefect_server`) and the ASGI app of both of aeval's servers (`server_app`). Finding or
starting them is `aeval.tasks._engine.servers`."""
