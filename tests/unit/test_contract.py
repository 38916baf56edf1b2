"""eval.config parsing (good and bad input) and the three-tier fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeval.errors import ContractError
from aeval.skill.contract import (
    CommandCheck,
    FileExists,
    Tier,
    find_marketplace,
    load_contract,
    parse_config,
)
from aeval.skill.skill_md import load_skill
from tests.conftest import EXAMPLES


def write_skill(root: Path, name: str = "demo", body: str = "# Demo\n", extra: str = "") -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: A demo skill.\n{extra}---\n"
                                f"{body}")
    return d


def write_config(skill_dir: Path, data: object, name: str = "eval.config") -> Path:
    p = skill_dir / name
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


CASE = {"id": "c1", "prompt": "Do it.", "expected_outcome": "It is done."}


def problems(exc: pytest.ExceptionInfo) -> list[str]:
    return [str(p) for p in exc.value.problems]


def test_full_case_parses_with_typed_and_natural_language_assertions(tmp_path):
    d = write_skill(tmp_path)
    cfg = write_config(d, {"evals": [{
        **CASE, "required_credentials": ["HF_TOKEN"], "files": [], "setup": ["true"],
        "preflight": ["true"], "steps": ["echo hi"], "pass_threshold": 0.5, "timeout_s": 60,
        "max_turns": 5,
        "assertions": ["The output is polite",
                       {"type": "file_exists", "path": "outputs/x"},
                       {"type": "command", "run": "true", "stdout": "ok"}]}]})
    case = parse_config(cfg).evals[0]
    assert case.assertions[0] == "The output is polite"
    assert isinstance(case.assertions[1], FileExists)
    assert isinstance(case.assertions[2], CommandCheck) and case.assertions[2].exit_code == 0
    assert case.pass_threshold == 0.5 and case.required_credentials == ["HF_TOKEN"]


def test_yaml_is_accepted(tmp_path):
    d = write_skill(tmp_path)
    cfg = write_config(d, "evals:\n  - id: y\n    prompt: p\n    expected_outcome: o\n"
                          "    assertions:\n      - {type: file_exists, path: a.txt}\n")
    assert parse_config(cfg).evals[0].id == "y"


@pytest.mark.parametrize("case, expected", [
    ({**CASE, "assertions": [{"type": "file_exist", "path": "x"}]},
     "evals[0].assertions[0]: unknown check type 'file_exist'; known: file_exists,"),
    ({**CASE, "assertions": [{"type": "file_exists"}]},
     "evals[0].assertions[0].path: Field required"),
    ({**CASE, "pass_threshold": 1.5}, "evals[0].pass_threshold: Input should be less than"),
    ({**CASE, "id": "bad id!"}, "evals[0].id: String should match pattern"),
    ({**CASE, "prmpt": "typo"}, "evals[0].prmpt: unknown field"),
    ({**CASE, "files": ["../outside"]},
     "evals[0].files: '../outside' must be a relative path inside the workspace"),
    ({**CASE, "required_credentials": ["NOT-A-VAR"]},
     "evals[0].required_credentials[0]: String should match pattern"),
    ({**CASE, "assertions": [{"type": "file_contains", "path": "a", "pattern": "("}]},
     "evals[0].assertions: pattern '(' is not a valid regex"),
    # what only a backtracking engine can match is refused: it could hang on a case's output
    ({**CASE, "assertions": [{"type": "file_contains", "path": "a", "pattern": r"(\w+) \1"}]},
     r"evals[0].assertions: pattern '(\\w+) \\1' is not a valid regex: invalid escape "
     r"sequence: \1 (RE2 syntax, linear time: no backreferences or lookaround"),
    ({**CASE, "assertions": [{"type": "command", "run": "true", "stdout": "^(?!error)"}]},
     "evals[0].assertions: stdout '^(?!error)' is not a valid regex: invalid perl operator"),
    ({**CASE, "assertions": [{"type": "tool_used", "tool": "bash", "input": "(?<=run )x"}]},
     "evals[0].assertions: input '(?<=run )x' is not a valid regex"),
    ({"id": "c1", "prompt": "p"}, "evals[0].expected_outcome: Field required"),
    ({**CASE, "max_commands": 0}, "evals[0].max_commands: Input should be greater than or "
                                  "equal to 1"),
    ({**CASE, "max_wall_s": -5}, "evals[0].max_wall_s: Input should be greater than 0"),
    ({**CASE, "max_tokens": "lots"}, "evals[0].max_tokens: Input should be a valid integer"),
    ({**CASE, "outputs": ["/tmp/report.md"]},
     "evals[0].outputs: '/tmp/report.md' must be a relative path inside the workspace"),
    # a budget is eval.config's field, never an author's check
    ({**CASE, "assertions": [{"type": "budget", "measure": "commands", "at_most": 3}]},
     "evals[0].assertions[0]: unknown check type 'budget'; known: file_exists,"),
    ({**CASE, "required_credentials": ["AEVAL_GITLAB_TOKEN"]},
     "evals[0].required_credentials: AEVAL_GITLAB_TOKEN is reserved for aeval and CI"),
    ({**CASE, "required_credentials": ["HF_TOKEN", "CI_JOB_TOKEN"]},
     "evals[0].required_credentials: CI_JOB_TOKEN is reserved"),
    ({**CASE, "required_credentials": ["PREFECT_API_KEY"]},
     "evals[0].required_credentials: PREFECT_API_KEY is reserved"),
])
def test_bad_config_names_file_field_and_problem(tmp_path, case, expected):
    d = write_skill(tmp_path)
    cfg = write_config(d, {"evals": [case]})
    with pytest.raises(ContractError) as exc:
        parse_config(cfg)
    lines = problems(exc)
    assert all(line.startswith(f"{cfg}:") for line in lines), lines
    assert any(line.startswith(f"{cfg}:{expected}") for line in lines), (expected, lines)


def test_duplicate_ids_and_empty_evals_are_errors(tmp_path):
    d = write_skill(tmp_path)
    with pytest.raises(ContractError, match="duplicate case id 'c1'"):
        parse_config(write_config(d, {"evals": [CASE, CASE]}))
    with pytest.raises(ContractError, match="evals: List should have at least 1 item"):
        parse_config(write_config(d, {"evals": []}))


def test_unparseable_config_reports_the_line(tmp_path):
    d = write_skill(tmp_path)
    with pytest.raises(ContractError) as exc:
        parse_config(write_config(d, '{"evals": [ {"id": "x",, } ]}'))
    assert "line 1" in str(exc.value) and str(d / "eval.config") in str(exc.value)


def test_a_yaml_error_names_its_own_line_and_column(tmp_path):
    """A tab on line 4 of a YAML eval.config is line 4 (it was reported as JSON's "line 1:
    Expecting value"), in one line."""
    d = write_skill(tmp_path)
    text = ("evals:\n  - id: train\n    prompt: Train the model.\n"
            "\texpected_outcome: A checkpoint.\n")
    with pytest.raises(ContractError) as exc:
        parse_config(write_config(d, text))
    (problem,) = exc.value.problems
    message = str(problem)
    assert message.startswith(f"{d / 'eval.config'}: not valid YAML: line 4, column 1: ")
    assert "\\t" in message or "tab" in message.lower() or "cannot start" in message
    assert "\n" not in message and "JSON" not in message


def test_a_json_error_keeps_the_json_place(tmp_path):
    d = write_skill(tmp_path)
    with pytest.raises(ContractError) as exc:
        parse_config(write_config(d, '{\n  "evals": [\n    {"id": "x",, }\n  ]\n}'))
    assert ": not valid JSON: line 3, column " in str(exc.value)


def test_missing_case_file_is_reported(tmp_path):
    d = write_skill(tmp_path)
    write_config(d, {"evals": [{**CASE, "files": ["fixtures/"]}]})
    with pytest.raises(ContractError, match=r"evals\[0\]\.files\[0\]: 'fixtures/' does not"):
        load_contract(load_skill(d), None)


def test_tier_per_skill_wins_over_per_name(tmp_path):
    d = write_skill(tmp_path / "skills")
    write_config(d, {"evals": [{**CASE, "id": "own"}]})
    (tmp_path / ".aeval" / "evals").mkdir(parents=True)
    (tmp_path / ".aeval" / "evals" / "demo.config").write_text(
        json.dumps({"evals": [{**CASE, "id": "central"}]}))
    loaded = load_contract(load_skill(d), find_marketplace(d))
    assert loaded.tier == Tier.per_skill and loaded.config.evals[0].id == "own"


def test_tier_per_name_from_marketplace(tmp_path):
    d = write_skill(tmp_path / "skills")
    (tmp_path / ".aeval" / "evals").mkdir(parents=True)
    (tmp_path / ".aeval" / "evals" / "demo.config").write_text(
        json.dumps({"evals": [{**CASE, "id": "central"}]}))
    assert find_marketplace(d) == tmp_path.resolve()
    loaded = load_contract(load_skill(d), find_marketplace(d))
    assert loaded.tier == Tier.per_name and loaded.config.evals[0].id == "central"
    assert loaded.source.endswith(".aeval/evals/demo.config")


def test_tier_generic_uses_description_and_shell_blocks(tmp_path):
    d = write_skill(tmp_path, body="Intro\n\n```bash\necho one\necho two\n```\n\n```python\n"
                                   "print('not a step')\n```\n\n```sh\necho three\n```\n")
    loaded = load_contract(load_skill(d), None)
    assert loaded.tier == Tier.generic and loaded.source is None
    case = loaded.config.evals[0]
    assert "A demo skill." in case.prompt
    assert case.steps == ["echo one\necho two", "echo three"]
    assert case.assertions == ["The documented workflow completes without error."]
    assert case.doc_test is True  # no commands_succeeded: the doc-test rules decide


def test_generic_tier_without_shell_blocks_has_no_steps(tmp_path):
    loaded = load_contract(load_skill(write_skill(tmp_path)), None)
    assert loaded.config.evals[0].steps == []
    assert loaded.config.evals[0].assertions == [
        "The documented workflow completes without error."]


def test_example_tiers():
    skills = EXAMPLES / "skills"
    tiers = {n: load_contract(load_skill(skills / n), find_marketplace(skills / n)).tier
             for n in ("csv-stats", "segmentation", "release-notes", "hello-docs")}
    assert tiers == {"csv-stats": Tier.per_skill, "segmentation": Tier.per_skill,
                     "release-notes": Tier.per_name, "hello-docs": Tier.generic}


def test_the_disk_bound_is_read_in_mib_and_a_non_positive_one_is_refused(tmp_path):
    d = write_skill(tmp_path)
    case = parse_config(write_config(d, {"evals": [{**CASE, "max_disk_mb": 64}]})).evals[0]
    assert case.max_disk_mb == 64
    assert parse_config(write_config(d, {"evals": [CASE]})).evals[0].max_disk_mb == 10_240
    with pytest.raises(ContractError, match=r"evals\[0\]\.max_disk_mb"):
        parse_config(write_config(d, {"evals": [{**CASE, "max_disk_mb": 0}]}))
