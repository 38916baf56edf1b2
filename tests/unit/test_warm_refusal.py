"""What the warm process serves (`aeval.deployments.servers.warm.refusal`, issue 33): only a `run`
or `sweep` command line aeval's own parser accepts, never one that turns the sandbox off, in any
spelling argparse takes (a prefix of the flag, ``=``), nor through ``AEVAL_SANDBOX`` in the
environment the connection sent; and the invocation's quick look (`sandbox_off`) agrees, so a
user's own ``--sandbox none`` run goes in-process without a round trip."""

from __future__ import annotations

import pytest

from aeval.deployments.servers.warm import refusal, sandbox_off

ENV = {"HOME": "/home/dev", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
SKILLS = "skills/csv-stats"


@pytest.mark.parametrize("argv", [
    ["run", SKILLS], ["run", SKILLS, "--sandbox", "require"], ["run", "--sandbox=auto", SKILLS],
    ["run", SKILLS, "--runtime", "literal", "--out", "/tmp/o", "-q"], ["sweep", "."],
])
def test_run_and_sweep_with_the_sandbox_on_are_served(argv):
    assert refusal(argv, ENV) is None
    assert not sandbox_off(argv, ENV)


@pytest.mark.parametrize("argv", [
    ["run", SKILLS, "--sandbox", "none"], ["run", SKILLS, "--sandbox=none"],
    ["run", "--sandb", "none", SKILLS], ["run", "--sandbox", "auto", "--sandbox=none", SKILLS],
    ["run", SKILLS, "--sand=none"],
])
def test_any_spelling_of_sandbox_none_is_refused(argv):
    assert refusal(argv, ENV) is not None
    assert sandbox_off(argv, ENV), "the invocation would ask the warm process in vain"


@pytest.mark.parametrize("name,value", [("AEVAL_SANDBOX", "none"), ("aeval_sandbox", "none"),
                                        ("AEVAL_SANDBOX", "None"), ("AEVAL_SANDBOX", "")])
def test_the_environment_cannot_turn_the_sandbox_off_either(name, value):
    env = {**ENV, name: value}
    assert refusal(["run", SKILLS], env) == f"{name} is not auto or require"
    assert refusal(["sweep", "."], env) is not None
    assert sandbox_off(["run", SKILLS], env)


@pytest.mark.parametrize("argv", [
    ["validate", SKILLS], ["post", "latest", "--forge", "github"], ["run", "--no-such-flag"],
    ["run", SKILLS, "--sandbox", "off"], ["run", "-h"], [], ["run", 3], "run skills",
])
def test_anything_else_is_refused(argv):
    assert refusal(argv, ENV) is not None


def test_an_environment_that_is_not_one_is_refused():
    assert refusal(["run", SKILLS], {"PATH": 1}) is not None
    assert refusal(["run", SKILLS], ["PATH=/bin"]) is not None
