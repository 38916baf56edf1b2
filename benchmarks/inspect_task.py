"""The latency workload of latency_workload.py as an Inspect AI task: one sample per skill,
its files (the skill copy at ``.agents/skills/<name>/`` and the fixture) placed in the
sample's local sandbox directory, a ``react`` agent with the ``bash`` tool.

Run by latency_workload.py from Inspect's own venv (never imported by aeval):
``inspect eval benchmarks/inspect_task.py -T spec=SPEC.json --model openai/scripted
--model-base-url URL --max-connections 8``. SPEC.json is a list of
``{"id", "input", "target", "files": {relative path: text}}``.
"""

import json

from inspect_ai import Task, task
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.tool import bash


@task
def ledger_latency(spec: str) -> Task:
    with open(spec) as f:
        items = json.load(f)
    samples = [Sample(id=it["id"], input=it["input"], target=it["target"], files=it["files"])
               for it in items]
    return Task(dataset=samples, solver=react(tools=[bash(timeout=60)]), scorer=includes(),
                sandbox="local")
