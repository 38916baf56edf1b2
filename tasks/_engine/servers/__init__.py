"""Finding or starting aeval's Prefect server before Prefect is imported: the embedded one of an
invocation (`embedded`), the local one reused across invocations (`reused`), and what both
share (`home`: its state folder, the server's environment and auth string, the cached
database; it imports neither). The server processes themselves are
`aeval.deployments.servers`. No Prefect is imported here."""
