"""The seam between aeval and an agent runtime: the Protocol an adapter implements, the
request it gets, the result it returns, the recorder of its events and the runtimes' names
(`protocol`); a runtime's misconfiguration found before anything runs, such as a model it
needs or a provider key that is absent (`model_keys`). The runtimes themselves are
`aeval.adapters.runtimes`."""
