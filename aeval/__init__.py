"""aeval: deterministic, change-triggered testing of agent skills.

This package is the domain: the eval.config contract, artifact models, the runtime Protocol
and event models, the error tree, settings and the run store. It imports neither Prefect nor
any model SDK.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("aeval-skills")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+src"
