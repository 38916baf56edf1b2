"""The names aeval's deployments go by, shared by what serves them (`serve`) and what watches
them (`automations`), so that neither imports the other."""

from __future__ import annotations

MR = "mr"
NIGHTLY = "nightly"
NIGHTLY_ENTRYPOINT = "aeval.flows.sweep.sweep"
POOL_SUFFIX = "-pool"  # prefect.yaml's names: aeval-mr/mr-pool, aeval-sweep/nightly-pool
