"""Test fixtures that ship with aeval: a scripted model server speaking the providers' wire
formats on loopback, so tests (and users) can run real agents and SDKs with no model.

Stdlib only (plus pydantic): importing this package imports no model SDK. The command line is
``python -m aeval.testing.model_server SCRIPT.json``.
"""

from aeval.testing._script import Script, ScriptFile, ToolCall, Turn, load_script_file
from aeval.testing._server import RecordedRequest, ScriptedModelServer

__all__ = [
    "RecordedRequest",
    "Script",
    "ScriptFile",
    "ScriptedModelServer",
    "ToolCall",
    "Turn",
    "load_script_file",
]
