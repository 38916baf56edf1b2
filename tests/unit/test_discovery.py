"""Discovery and validation never fall over: hostile or odd input gives one clear line.

Each test builds the input an adversary (or an unlucky marketplace) would hand aeval, and
checks that discovery finishes quickly, that the bad skill is `invalid` with a line naming
file, field and problem, and that the other skills still load.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from aeval.errors import ContractError
from aeval.skill.contract import EvalCase, parse_config
from aeval.skill.skill_md import find_skill_roots, load_skill, scan_skill_roots
from aeval.tasks.run.examine import duplicate_name_warnings, examine

SKILL = """---
name: {name}
description: Convert CSV exports into summary statistics.
---
# {name}

```bash
python scripts/stats.py data.csv
```
"""


def skill(root: Path, folder: str, name: str | None = None, config: str | None = None,
          config_name: str = "eval.config") -> Path:
    d = root / folder
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL.format(name=name if name is not None else folder))
    (d / "scripts" / "stats.py").write_text("print('ok')\n")
    if config is not None:
        (d / config_name).write_text(config)
    return d


def case(**extra) -> dict:
    return {"id": "stats", "prompt": "Summarize data.csv.", "expected_outcome": "A summary.",
            "steps": ["python scripts/stats.py data.csv"], **extra}


def only_problem(ex) -> str:
    assert not ex.valid and len(ex.problems) == 1, ex.problems
    return ex.problems[0]


# ---- size and nesting ----------------------------------------------------------------------


def test_100k_deep_json_config_is_invalid_not_a_recursion_error(tmp_path):
    deep = '{"evals": ' + "[" * 100_000 + "]" * 100_000 + "}"
    d = skill(tmp_path, "csv-stats", config=deep)
    start = time.monotonic()
    ex = examine(d)
    assert time.monotonic() - start < 5
    line = only_problem(ex)
    assert line.startswith(str(d / "eval.config")) and "nested deeper than 64 levels" in line


def test_deep_block_yaml_config_is_invalid(tmp_path):
    text = "evals:\n" + "".join("  " * i + "- k:\n" for i in range(1, 200))
    d = skill(tmp_path, "csv-stats", config=text, config_name="eval.config.yaml")
    line = only_problem(examine(d))
    assert "eval.config.yaml" in line and "nested deeper than 64 levels" in line


def test_deep_flow_yaml_in_frontmatter_is_invalid(tmp_path):
    d = tmp_path / "csv-stats"
    d.mkdir()
    (d / "SKILL.md").write_text("---\nname: csv-stats\ndescription: d\nmetadata: " +
                                "[" * 100_000 + "]" * 100_000 + "\n---\n")
    line = only_problem(examine(d))
    assert line == f"{d / 'SKILL.md'}:frontmatter: nested deeper than 64 levels"


@pytest.mark.parametrize("number, name", [("1" * 5000, "eval.config"),
                                          ("1" * 5000, "eval.config.yaml")])
def test_a_number_too_long_to_read_is_invalid(tmp_path, number, name):
    text = ('{"evals": [{"id": "c", "prompt": "p", "expected_outcome": "o", "max_turns": '
            f"{number}}}]}}") if name == "eval.config" else \
        f"evals:\n- id: c\n  prompt: p\n  expected_outcome: o\n  max_turns: {number}\n"
    d = skill(tmp_path, "csv-stats", config=text, config_name=name)
    assert "a value cannot be read: Exceeds the limit" in only_problem(examine(d))


def test_oversized_config_is_invalid(tmp_path):
    big = json.dumps({"evals": [case(prompt="x" * 2_000_000)]})
    d = skill(tmp_path, "csv-stats", config=big)
    assert "at most 1000000" in only_problem(examine(d))


ALIAS_BOMB = """evals:
- id: bomb
  prompt: p
  expected_outcome: o
  assertions:
  - type: json_path
    path: out.json
    query: a
    equals: &i [&h [&g [&f [&e [&d [&c [&b [&a [x,x,x,x,x,x,x,x,x],*a,*a,*a,*a,*a,*a,*a,*a],
      *b,*b,*b,*b,*b,*b,*b,*b],*c,*c,*c,*c,*c,*c,*c,*c],*d,*d,*d,*d,*d,*d,*d,*d],
      *e,*e,*e,*e,*e,*e,*e,*e],*f,*f,*f,*f,*f,*f,*f,*f],*g,*g,*g,*g,*g,*g,*g,*g],*h,*h,*h]
"""


def test_yaml_alias_bomb_is_refused_before_it_expands(tmp_path):
    assert len(ALIAS_BOMB) < 700
    d = skill(tmp_path, "csv-stats", config=ALIAS_BOMB, config_name="eval.config.yaml")
    start = time.monotonic()
    line = only_problem(examine(d))
    assert time.monotonic() - start < 2
    assert "YAML aliases (*a) are not allowed" in line and "line 9" in line


def test_yaml_alias_in_frontmatter_is_refused(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    (d / "SKILL.md").write_text("---\nname: &n s\ndescription: *n\n---\n")
    with pytest.raises(ContractError, match=r"frontmatter: line 3: YAML aliases \(\*n\)"):
        load_skill(d)


# ---- folder names and symlinks --------------------------------------------------------------


def test_non_utf8_folder_name_is_a_warning_and_the_rest_is_found(tmp_path):
    skill(tmp_path, "csv-stats")
    bad = os.path.join(os.fsencode(tmp_path), b"caf\xe9-skill")
    os.mkdir(bad)
    with open(os.path.join(bad, b"SKILL.md"), "w") as fh:
        fh.write(SKILL.format(name="cafe-skill"))
    found = scan_skill_roots(tmp_path)
    assert found.roots == [tmp_path / "csv-stats"]
    assert len(found.warnings) == 1
    assert "caf\\xe9-skill" in found.warnings[0] and "not UTF-8" in found.warnings[0]
    # Named directly (a CLI argument), it is passed over the same way.
    direct = scan_skill_roots(Path(os.fsdecode(bad)))
    assert direct.roots == [] and "path is not UTF-8" in direct.warnings[0]


def test_self_symlinks_in_a_marketplace_do_not_hang_discovery(tmp_path):
    market = tmp_path / "market"
    skill(market / "skills", "csv-stats")
    skill(market / "more", "pdf-tools")
    # Two links back to the marketplace root: followed naively, 2**depth paths.
    os.symlink(market, market / "skills" / "mirror")
    os.symlink("..", market / "more" / "up")
    os.symlink("selfloop", market / "selfloop")  # ELOOP
    start = time.monotonic()
    roots = find_skill_roots(market)
    assert time.monotonic() - start < 2
    assert roots == [market / "more" / "pdf-tools", market / "skills" / "csv-stats"]


def test_a_symlinked_skill_is_found_once(tmp_path):
    real = skill(tmp_path / "store", "csv-stats")
    (tmp_path / "market").mkdir()
    os.symlink(real, tmp_path / "market" / "a-link")
    os.symlink(real, tmp_path / "market" / "b-link")
    assert find_skill_roots(tmp_path / "market") == [tmp_path / "market" / "a-link"]


# ---- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", [
    ("..", "'..' is not a usable name"),
    ("/etc/cron.d", "contains a path separator"),
    ("team/csv-stats", "contains a path separator"),
    ('"csv\\0stats"', "frontmatter.name: contains a NUL byte"),
    ('"csv\\tstats"', "contains a NUL or control character"),
])
def test_name_that_is_not_a_safe_path_segment_is_invalid(tmp_path, name, expected):
    d = skill(tmp_path, "csv-stats", name=name)
    line = only_problem(examine(d))
    assert line.startswith(str(d / "SKILL.md") + ":") and expected in line


def test_two_skills_with_one_name_are_both_kept_with_a_warning(tmp_path):
    a = skill(tmp_path / "team-a", "csv-stats")
    b = skill(tmp_path / "team-b", "stats", name="csv-stats")
    other = skill(tmp_path, "pdf-tools")
    examined = [examine(r) for r in find_skill_roots(tmp_path)]
    assert sorted(e.root for e in examined) == sorted([a, b, other])
    assert all(e.valid and e.cases for e in examined)
    warnings = duplicate_name_warnings(examined)
    assert set(warnings) == {a, b}
    for w in warnings.values():
        assert str(a) in w and str(b) in w and "'csv-stats'" in w


# ---- validate rejects what would crash run --------------------------------------------------


@pytest.mark.parametrize("text, name, expected", [
    ('{"evals": [{"id": "c", "prompt": "p", "expected_outcome": "o", "timeout_s": Infinity}]}',
     "eval.config", "Infinity is not a finite number"),
    ('{"evals": [{"id": "c", "prompt": "p", "expected_outcome": "o", "pass_threshold": NaN}]}',
     "eval.config", "NaN is not a finite number"),
    ('{"evals": [{"id": "c", "prompt": "p", "expected_outcome": "o", "timeout_s": 1e999}]}',
     "eval.config", "evals[0].timeout_s: inf is not a finite number"),
    ('{"evals": [{"id": "c", "prompt": "p", "expected_outcome": "o", "timeout_s": 1e300}]}',
     "eval.config", "evals[0].timeout_s: Input should be less than or equal to 604800"),
    ("evals:\n- {id: c, prompt: p, expected_outcome: o, timeout_s: .inf}\n",
     "eval.config.yaml", "evals[0].timeout_s: inf is not a finite number"),
    (json.dumps({"evals": [case(steps=["python scripts/stats.py\0 data.csv"])]}),
     "eval.config", "evals[0].steps[0]: contains a NUL byte"),
    (json.dumps({"evals": [case(prompt="Summarize\0")]}),
     "eval.config", "evals[0].prompt: contains a NUL byte"),
    (json.dumps({"evals": [case(files=["data\0.csv"])]}),
     "eval.config", "evals[0].files[0]: contains a NUL byte"),
])
def test_validate_rejects_values_that_would_crash_run(tmp_path, text, name, expected):
    d = skill(tmp_path, "csv-stats", config=text, config_name=name)
    with pytest.raises(ContractError) as exc:
        parse_config(d / name)
    assert [str(p) for p in exc.value.problems] == [
        f"{d / name}:{expected}" if expected.startswith("evals") else f"{d / name}: {expected}"]


@pytest.mark.parametrize("bad", [
    {"timeout_s": float("inf")}, {"timeout_s": float("nan")},
    {"steps": ["echo \0"]}, {"setup": ["pip install x\0"]},
    {"assertions": [{"type": "json_path", "path": "a.json", "query": "x",
                     "equals": float("nan")}]},
])
def test_the_contract_model_itself_rejects_them(bad):
    with pytest.raises(ValidationError):
        EvalCase.model_validate(case(**bad))


def test_generic_case_is_a_doc_test_without_commands_succeeded(tmp_path):
    ex = examine(skill(tmp_path, "csv-stats"))
    (c,) = ex.cases
    assert c.doc_test and c.steps == ["python scripts/stats.py data.csv"]
    assert all(isinstance(a, str) for a in c.assertions)


# ---- examine never raises -------------------------------------------------------------------


def test_examine_never_raises_on_odd_files(tmp_path):
    loop = tmp_path / "loop"
    loop.mkdir()
    os.symlink("SKILL.md", loop / "SKILL.md")  # a SKILL.md that is a symlink to itself
    binary = tmp_path / "binary"
    binary.mkdir()
    (binary / "SKILL.md").write_bytes(b"---\nname: \xff\xfe\n---\n")
    cfg_dir = skill(tmp_path, "cfg-dir")
    (cfg_dir / "eval.config.json").mkdir()  # a folder where the contract would be
    cfg_link = skill(tmp_path, "cfg-link")
    os.symlink("eval.config", cfg_link / "eval.config")
    latin = skill(tmp_path, "latin", config="")
    (latin / "eval.config").write_bytes(b'{"evals": [{"id": "caf\xe9"}]}')
    for d in (loop, binary, cfg_dir, cfg_link, latin, tmp_path / "missing"):
        ex = examine(d)
        assert ex.valid or ex.problems, d
    assert "no SKILL.md" in only_problem(examine(loop))
    assert "cannot be read" in only_problem(examine(binary))
    assert "cannot be read" in only_problem(examine(latin))
    assert examine(cfg_dir).valid and examine(cfg_link).valid  # generic tier
