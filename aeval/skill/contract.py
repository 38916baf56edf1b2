"""The eval.config contract: what a skill declares about how it is tested.

JSON (YAML accepted) next to SKILL.md. Three tiers when a skill has none:
per-skill ``eval.config`` -> per-name ``<marketplace>/.aeval/evals/<name>.config`` -> a generic
smoke case derived from SKILL.md. The tier used is recorded in every case's metadata.

A skill without an eval.config that has Anthropic skill-creator's ``evals/evals.json`` (the
format most skill authors already have) is read from it, per-skill tier, as the cases it
declares (`from_skill_creator`): ``prompt``, ``expected_output`` as the expected outcome,
``files``, ``expectations`` as natural-language assertions.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import yaml
from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from aeval.errors import ContractError, Problem, yaml_error_text
from aeval.isolation.copying import copy_entry, skill_copy_rule
from aeval.isolation.hardening import RESERVED_CREDENTIALS
from aeval.skill import patterns
from aeval.skill.safe_data import MAX_BYTES, UnsafeData, check_values, load_json, load_yaml
from aeval.skill.skill_md import Skill
from aeval.strict import StrictModel

CONFIG_NAMES = ("eval.config", "eval.config.json", "eval.config.yaml", "eval.config.yml")
SKILL_CREATOR_EVALS = "evals/evals.json"
"""Anthropic skill-creator's eval file, relative to the skill (read when there is no
eval.config)."""
CONTRACT_FILES = (*CONFIG_NAMES, SKILL_CREATOR_EVALS)
"""The files of a skill that hold its tests, not the skill: never in an attempt's skill copy
(the agent would read the expected outcome and the assertions) and not withheld from the
grader (who is shown the case anyway)."""
SKILL_CREATOR_FIELDS = {"id": "id", "prompt": "prompt", "expected_output": "expected_outcome",
                        "files": "files", "expectations": "assertions"}
"""skill-creator's field -> eval.config's."""
ID_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
ENV_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
GENERIC_OUTCOME = "The documented workflow completes without error."
DOC_CASE_ID = "skill-md"  # SKILL.md's doc test beside a contract's cases (literal only)
MAX_DISK_MB = 1 << 24  # 16 TiB: beyond it a disk bound is a typo
MAX_MEMORY_MB = 1 << 22  # 4 TiB: beyond it a memory bound is a typo
MAX_TIMEOUT_S = 7 * 24 * 3600  # beyond this a timeout is a typo, and huge ones overflow timers


class _Strict(StrictModel):
    # Infinity / NaN pass `gt=0` and then crash `run` (a timeout of inf): refused everywhere.
    model_config = ConfigDict(allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _runnable_values(cls, data: Any) -> Any:
        """NUL bytes (subprocess arguments, paths) and non-finite numbers anywhere, `Any`
        fields included, would crash the run after `validate` said yes."""
        try:
            check_values(data)
        except UnsafeData as exc:
            raise ValueError(str(exc)) from None
        return data


def _relative(value: str) -> str:
    p = PurePosixPath(value)
    if p.is_absolute() or ".." in p.parts:
        raise ValueError(f"{value!r} must be a relative path inside the workspace")
    return value


# ---- deterministic checks -------------------------------------------------------------------


class _Check(_Strict):
    description: str | None = Field(
        None, description="What the check means, shown instead of the generated text."
    )


class FileExists(_Check):
    """A file (or folder) exists in the workspace after the run."""

    type: Literal["file_exists"]
    path: str = Field(description="Path relative to the workspace root.")
    _v = field_validator("path")(_relative)


class FileContains(_Check):
    """A workspace file's text matches a regular expression (RE2 syntax: linear time; MULTILINE)."""

    type: Literal["file_contains"]
    path: str = Field(description="Path relative to the workspace root.")
    pattern: str = Field(description="Regular expression searched in the file's text.")
    _v = field_validator("path")(_relative)


class CommandCheck(_Check):
    """A command run in the workspace after the run: its exit code, and optionally its stdout."""

    type: Literal["command"]
    run: str = Field(description="Shell command (bash), run with the workspace root as cwd.")
    exit_code: int = Field(0, description="Expected exit code.")
    stdout: str | None = Field(None, description="Regular expression stdout must match.")
    timeout_s: float = Field(120, gt=0, le=MAX_TIMEOUT_S,
                             description="Seconds before the command is killed.")


class JsonPath(_Check):
    """A value inside a JSON file of the workspace.

    ``query`` is a dotted path with optional indices: ``metrics.miou``, ``$.items[0].name``.
    With neither ``equals`` nor ``pattern`` the check passes when the value exists.
    """

    type: Literal["json_path"]
    path: str = Field(description="JSON file, relative to the workspace root.")
    query: str = Field(description="Dotted path with [index] parts, optionally starting '$.'.")
    equals: Any = Field(None, description="Expected value (compared after JSON decoding).")
    pattern: str | None = Field(None, description="Regular expression the value's text matches.")
    _v = field_validator("path")(_relative)


TranscriptSource = Literal["any", "tool_output", "agent"]
SOURCE_FIELD = Field(
    "any", description="Where the text must be: `tool_output` (what a tool that ran printed: "
                       "evidence), `agent` (the agent's own messages: a claim), `any` (either, "
                       "or the input of a tool call). Never the prompt or text handed to the "
                       "agent.")


class TranscriptContains(_Check):
    """What the agent and its tools produced (not the prompt) contains a literal text, within
    one event."""

    type: Literal["transcript_contains"]
    text: str = Field(min_length=1, description="Literal text, case-sensitive.")
    source: TranscriptSource = SOURCE_FIELD


class TranscriptRegex(_Check):
    """What the agent and its tools produced (not the prompt) matches a regular expression,
    within one event."""

    type: Literal["transcript_regex"]
    pattern: str = Field(description="Regular expression (MULTILINE).")
    source: TranscriptSource = SOURCE_FIELD


class ToolUsed(_Check):
    """The executor called a tool, optionally with input matching a regular expression."""

    type: Literal["tool_used"]
    tool: str = Field(description="Normalized tool name: bash, read_file, write_file ...")
    input: str | None = Field(
        None, description="Regular expression matched against the call's input (as JSON text)."
    )
    min_count: int = Field(1, ge=1, description="Least number of matching calls.")


class CommandsSucceeded(_Check):
    """No tool call of the run failed (non-zero exit, tool error): the first attempt was clean."""

    type: Literal["commands_succeeded"]


class NoStrayFiles(_Check):
    """No file the run created or changed lies outside what the case declares as its outputs:
    the case's ``outputs`` and the paths its file checks name (``file_exists``,
    ``file_contains``, ``json_path``). The skill's own folder and the runtime's folders are
    never outputs, so never stray. Fails listing the stray files."""

    type: Literal["no_stray_files"]


DeterministicCheck = Annotated[
    FileExists | FileContains | CommandCheck | JsonPath | TranscriptContains | TranscriptRegex
    | ToolUsed | CommandsSucceeded | NoStrayFiles,
    Field(discriminator="type"),
]
CHECK_TYPES = tuple(
    t.model_fields["type"].annotation.__args__[0]  # type: ignore[union-attr]
    for t in (FileExists, FileContains, CommandCheck, JsonPath, TranscriptContains,
              TranscriptRegex, ToolUsed, CommandsSucceeded, NoStrayFiles)
)
FILE_CHECKS = (FileExists, FileContains, JsonPath)
"""The checks whose ``path`` declares an output of the case (`declared_outputs`)."""

BudgetMeasure = Literal["tokens", "commands", "wall_s", "turns"]
RelativeMeasure = Literal["turns", "tokens", "commands", "wall_s"]
BUDGET_FIELDS: dict[str, BudgetMeasure] = {"max_tokens": "tokens", "max_commands": "commands",
                                           "max_wall_s": "wall_s"}
"""eval.config's budget field -> what it bounds, in the order budgets are listed (B1, B2 ...)."""


class Budget(_Check):
    """A budget of the case's graded attempt, from eval.config (`max_tokens`, `max_commands`,
    `max_wall_s`): never written among a contract's assertions, but written by aeval into
    assertions.json (ids B1, B2 ...) before anything runs."""

    type: Literal["budget"]
    measure: BudgetMeasure = Field(description="tokens (prompt, cached, cache-write and "
                                               "output), commands (shell tool calls), "
                                               "wall_s (the executor's seconds) or turns "
                                               "(relative budgets only).")
    at_most: float = Field(gt=0, description="The most the attempt may use.")
    vs_base: float | None = Field(
        None, description="A relative budget (`max_vs_base`): the factor of the base "
                          "version's figure `base` that gave `at_most` (with the noise "
                          "margin: never below the base's figure plus one command, turn or "
                          "second, or 100 tokens).")
    base: float | None = Field(None, description="The base version's measured figure on this "
                                                 "case (relative budgets only).")


SpecCheck = Annotated[
    FileExists | FileContains | CommandCheck | JsonPath | TranscriptContains | TranscriptRegex
    | ToolUsed | CommandsSucceeded | NoStrayFiles | Budget,
    Field(discriminator="type"),
]
"""A check of assertions.json: an author's, or a budget aeval adds from the contract."""

Assertion = Annotated[
    str | DeterministicCheck,
    Field(description="A natural-language assertion (judged by the grader) or a typed check."),
]


# ---- the contract ---------------------------------------------------------------------------


class EvalCase(_Strict):
    """One independent test case: its own session, its own workspace, graded alone."""

    id: str = Field(pattern=ID_RE, description="Case id, unique in the skill: letters, digits, _.-")
    prompt: str = Field(min_length=1, description="What the executor is asked to do.")
    expected_outcome: str = Field(min_length=1, description="What a successful run produces.")
    required_credentials: list[Annotated[str, Field(pattern=ENV_RE)]] = Field(
        default_factory=list,
        description="Environment variable names passed to the executor; nothing else is.",
    )
    files: list[str] = Field(
        default_factory=list,
        description="Paths relative to the skill folder, copied into the workspace root first.",
    )
    setup: list[str] = Field(default_factory=list, description="Commands run at install time.")
    preflight: list[str] = Field(
        default_factory=list,
        description="Commands that must succeed before execution; failure is environmental.",
    )
    steps: list[str] = Field(
        default_factory=list, description="The documented workflow, run verbatim by `literal`."
    )
    assertions: list[Assertion] = Field(
        default_factory=list, description="Author assertions, kept verbatim."
    )
    pass_threshold: float = Field(
        1.0, ge=0.0, le=1.0, description="Least first-attempt pass rate for `pass`."
    )
    timeout_s: float = Field(1800, gt=0, le=MAX_TIMEOUT_S,
                             description="Seconds the execution may take (at most a week).")
    max_turns: int = Field(60, ge=1, le=100_000,
                           description="Most model turns the executor may take: the runtime "
                                       "stops the agent there (a stop, not a budget: what "
                                       "the run left is graded as usual, and its efficiency "
                                       "says `stopped_at_turn_limit`).")
    max_tokens: int | None = Field(
        None, ge=1, le=10**12,
        description="Budget: most tokens the graded attempt may use (prompt, cached, "
                    "cache-write and output together); over it the case fails with the "
                    "measured figure (agent runtimes only). Never stops the run.")
    max_commands: int | None = Field(
        None, ge=1, le=10**6,
        description="Budget: most shell commands (bash tool calls; under `literal` one per "
                    "step) the graded attempt may run; over it the case fails with the "
                    "measured figure. Never stops the run.")
    max_wall_s: float | None = Field(
        None, gt=0, le=MAX_TIMEOUT_S,
        description="Budget: most seconds the executor may take on the graded attempt; over "
                    "it the case fails with the measured figure (`timeout_s` is the hard "
                    "stop). Never stops the run.")
    max_vs_base: dict[RelativeMeasure, Annotated[float, Field(ge=1, le=100)]] = Field(
        default_factory=dict,
        description="Relative budgets against the skill's base version, for runs that "
                    "compare head with base (`--compare-base`, the MR flow's compare_base): "
                    "measure (turns, tokens, commands, wall_s) -> the most the head may use "
                    "as a factor of what the base used on the same case (`commands: 1.2`: "
                    "no more than 1.2x the base's commands). Written as a budget assertion "
                    "(B ids) with the base's figure before the head runs; over it the case "
                    "fails with both figures as evidence. A change within the noise margin "
                    "(1 command or turn, 100 tokens, 1 s) never fails. Applies only where "
                    "the base passed the case; ignored in a run without a base.")
    outputs: list[str] = Field(
        default_factory=list,
        description="What the case is meant to leave in the workspace: paths relative to its "
                    "root, a folder covering what it holds, or shell patterns (`*` crosses "
                    "folders). With the paths its file checks name, these are the declared "
                    "outputs; every other file the run created or changed is stray "
                    "(`no_stray_files`).")
    max_disk_mb: int = Field(
        10_240, ge=1, le=MAX_DISK_MB,
        description="MiB the attempt may hold on disk while its commands run (workspace, "
                    "HOME and each command's private /tmp together, as blocks allocated). "
                    "Over it the command is killed and the case fails: `wrote more than N`.")
    max_memory_mb: int = Field(
        8_192, ge=16, le=MAX_MEMORY_MB,
        description="MiB of memory the case's commands may use: the data each process "
                    "allocates (RLIMIT_DATA) and, where a memory cgroup can be made, all the "
                    "attempt's processes together. A command killed or refused memory at it "
                    "fails the case: `killed at the case's memory limit of N MiB` (never "
                    "reused by a sweep).")
    network: bool = Field(False, description="Outbound network access for the case's commands "
                                             "(setup reaching package registries, a skill "
                                             "that calls a public API), through a user-mode "
                                             "network stack: the host's loopback and its own "
                                             "addresses stay unreachable. False (default): a "
                                             "private loopback only. Agent runtimes reach "
                                             "their model through aeval's key proxy either "
                                             "way.")
    doc_test: bool = Field(
        False,
        description="Run `steps` as a doc test of SKILL.md's shell blocks (the generic tier under "
                    "`literal`): from the skill folder, placeholders skipped, and only a "
                    "failure in the skill's own code or interface counts as a failure.",
    )
    host_tools: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list,
        description="Host commands or Python modules the case declares it needs (installed by "
                    "`setup` or the image). A doc-test block missing an undeclared one leaves "
                    "the case `untested: needs X`; a declared one missing is an environment "
                    "error.",
    )

    _files = field_validator("files", "outputs")(lambda v: [_relative(x) for x in v])

    @field_validator("required_credentials")
    @classmethod
    def _not_reserved(cls, value: list[str]) -> list[str]:
        for name in value:
            if RESERVED_CREDENTIALS.match(name):
                raise ValueError(f"{name} is reserved for aeval and CI; a case cannot ask for it")
        return value

    @field_validator("assertions")
    @classmethod
    def _regexes_compile(cls, value: list) -> list:
        for a in value:
            for attr in ("pattern", "stdout", "input"):
                rx = getattr(a, attr, None)
                why = patterns.problem(rx) if isinstance(rx, str) else None
                if why:
                    raise ValueError(f"{attr} {rx!r} is not a valid regex: {why}")
        return value


class Triggers(_Strict):
    """Prompts that should, and should not, make an agent load the skill (`aeval trigger-accuracy`).

    The skill is installed among distractor skills; a should-prompt on which the agent loads
    this skill is a hit, a should_not-prompt on which it does is a false trigger. The skill's
    description is what is under test."""

    should: list[Annotated[str, Field(min_length=1, max_length=4000)]] = Field(
        default_factory=list, description="Prompts on which an agent should load this skill.")
    should_not: list[Annotated[str, Field(min_length=1, max_length=4000)]] = Field(
        default_factory=list,
        description="Prompts on which an agent should not load it (another skill's task, or "
                    "none's).")

    @field_validator("should", "should_not")
    @classmethod
    def _clean_prompts(cls, value: list[str]) -> list[str]:
        seen: set[str] = set()
        for i, prompt in enumerate(value):
            if not prompt.strip():
                raise ValueError(f"prompt [{i}] is blank")
            if prompt.strip() in seen:
                raise ValueError(f"prompt [{i}] is a duplicate: {prompt.strip()[:80]!r}")
            seen.add(prompt.strip())
        return value

    @model_validator(mode="after")
    def _not_both(self) -> Triggers:
        if not self.should and not self.should_not:
            raise ValueError("no prompt in should or should_not (leave triggers out to derive "
                             "a should-prompt from the description)")
        both = set(map(str.strip, self.should)) & set(map(str.strip, self.should_not))
        if both:
            raise ValueError(f"prompt in both should and should_not: {sorted(both)[0][:80]!r}")
        return self


class EvalConfig(_Strict):
    """The whole eval.config."""

    evals: list[EvalCase] = Field(min_length=1, description="Independent test cases.")
    triggers: Triggers | None = Field(
        None, description="Trigger prompts for `aeval trigger-accuracy` (None: the generic "
                          "tier's one should-prompt derived from the description).")

    @model_validator(mode="after")
    def _unique_ids(self) -> EvalConfig:
        seen: dict[str, str] = {}
        for i, c in enumerate(self.evals):
            if c.id in seen.values():
                raise ValueError(f"evals[{i}].id: duplicate case id {c.id!r}")
            if (other := seen.get(c.id.casefold())) is not None:
                raise ValueError(f"evals[{i}].id: case ids {other!r} and {c.id!r} differ only "
                                 "in case (one folder on a case-insensitive file system)")
            seen[c.id.casefold()] = c.id
        return self


class Tier(StrEnum):
    """Where a skill's cases came from."""

    per_skill = "per-skill"
    per_name = "per-name"
    generic = "generic"


class LoadedContract(_Strict):
    """The cases of one skill and where they came from."""

    tier: Tier
    source: str | None = Field(description="The contract file, or None for the generic tier.")
    config: EvalConfig


# ---- loading --------------------------------------------------------------------------------


def _loc(loc: tuple) -> str:
    """``('evals', 0, 'assertions', 1, 'tagged-union[...]', 'file_exists', 'path')`` ->
    ``evals[0].assertions[1].path``: union branch names are noise to a config author."""
    out, skip_tag = "", False
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        if part.startswith(("tagged-union[", "function-", "union[")):
            skip_tag = part.startswith("tagged-union[")
            continue
        if skip_tag and part in CHECK_TYPES:
            skip_tag = False
            continue
        out += f".{part}" if out else part
    return out


def problems_from_validation(where: str, exc: ValidationError) -> list[Problem]:
    """One `path:field: problem` per pydantic error, deduplicated, union noise removed."""
    out: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for err in exc.errors(include_url=False):
        loc = err["loc"]
        if loc and loc[-1] == "str" and err["type"] == "string_type":
            continue  # a typed check that failed is not also "not a string"
        field = _loc(loc)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "union_tag_invalid":
            msg = f"unknown check type {err['input'].get('type')!r}; known: " \
                  f"{', '.join(CHECK_TYPES)}"
        elif err["type"] == "union_tag_not_found":
            msg = "a check needs a `type` field"
        elif err["type"] == "extra_forbidden":
            msg = "unknown field"
        if (field, msg) not in seen:
            seen.add((field, msg))
            out.append(Problem(where, field, msg))
    return out


def parse_config(path: Path) -> EvalConfig:
    """Read and validate a contract file (JSON, or YAML; skill-creator's evals.json by its
    path, `from_skill_creator`). Raises ContractError."""
    where = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ContractError([Problem(where, "", f"{size} bytes, at most {MAX_BYTES}")])
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError([Problem(where, "", f"cannot be read: {exc}")]) from exc
    try:
        data = load_json(text)
    except UnsafeData as exc:
        raise ContractError([Problem(where, exc.field, exc.message)]) from None
    except json.JSONDecodeError as json_exc:
        # a file that opens like JSON is JSON and gets JSON's place; anything else is YAML
        # and gets YAML's (a tab on line 4 is line 4, not "line 1: Expecting value")
        looks_json = text.lstrip().startswith(("{", "["))
        try:
            data = load_yaml(text)
        except UnsafeData as exc:
            raise ContractError([Problem(where, exc.field, exc.message)]) from None
        except yaml.YAMLError as yaml_exc:
            message = (f"not valid JSON: line {json_exc.lineno}, column {json_exc.colno}: "
                       f"{json_exc.msg}" if looks_json
                       else f"not valid YAML: {yaml_error_text(yaml_exc)}")
            raise ContractError([Problem(where, "", message)]) from None
        if isinstance(data, str) or data is None:
            raise ContractError([Problem(where, "", f"not valid JSON: line {json_exc.lineno}: "
                                                    f"{json_exc.msg}")]) from None
    if not isinstance(data, dict):
        raise ContractError([Problem(where, "", "must be an object with an `evals` list")])
    if path.as_posix().endswith(SKILL_CREATOR_EVALS):
        return from_skill_creator(data, where)
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as exc:
        raise ContractError(problems_from_validation(where, exc)) from None


def from_skill_creator(data: dict[str, Any], where: str) -> EvalConfig:
    """The cases of a skill-creator ``evals/evals.json`` (``{"skill_name", "evals": [{"id",
    "prompt", "expected_output", "files", "expectations"}]}``). Its other fields (and the
    ``skill_name``) are not aeval's and are left alone; a problem names the file's own
    fields (``evals[1].expected_output``). Raises ContractError."""
    evals = data.get("evals")
    if not isinstance(evals, list):
        raise ContractError([Problem(where, "evals", "must be a list of cases")])
    cases: list[Any] = []
    for case in evals:
        if not isinstance(case, dict):
            cases.append(case)  # the model says what is wrong with it
            continue
        mapped = {ours: case[theirs] for theirs, ours in SKILL_CREATOR_FIELDS.items()
                  if theirs in case}
        if isinstance(mapped.get("id"), int) and not isinstance(mapped["id"], bool):
            mapped["id"] = str(mapped["id"])  # skill-creator numbers its cases
        cases.append(mapped)
    try:
        return EvalConfig.model_validate({"evals": cases})
    except ValidationError as exc:
        theirs = {ours: their for their, ours in SKILL_CREATOR_FIELDS.items()}
        problems = []
        for p in problems_from_validation(where, exc):
            head, dot, rest = p.field.partition("].")
            name, _, tail = rest.partition(".")
            field = f"{head}{dot}{theirs.get(name, name)}{'.' + tail if tail else ''}" \
                if dot else p.field
            problems.append(Problem(p.path, field, p.message))
        raise ContractError(problems) from None


def generic_config(skill: Skill) -> EvalConfig:
    """The generic smoke case: the description as prompt; SKILL.md's shell blocks as steps,
    marked as a doc test. No `commands_succeeded`: under an agent runtime one exploratory
    command that finds nothing would fail the case, and under `literal` the doc-test rules
    decide what a failing block means."""
    blocks = [code.replace("\0", "") for _, code in skill.shell_blocks()]
    return EvalConfig.model_validate({"evals": [{
        "id": "smoke",
        "prompt": f"Use the {skill.name} skill: {skill.description}",
        "expected_outcome": GENERIC_OUTCOME,
        "steps": blocks,
        "doc_test": True,
        "assertions": [GENERIC_OUTCOME],
    }], "triggers": generic_triggers(skill).model_dump()})


def generic_triggers(skill: Skill) -> Triggers:
    """One should-prompt from the description: a task the description says the skill is for,
    phrased without naming the skill (naming it would test the name, not the description)."""
    text = " ".join(skill.description.split())
    return Triggers(should=[f"I need help with this: {text}"])


def find_contract(skill: Skill, marketplace: Path | None) -> tuple[Tier, Path | None]:
    for name in CONFIG_NAMES:
        p = skill.path / name
        if p.is_file():
            return Tier.per_skill, p
    if (p := skill.path / SKILL_CREATOR_EVALS).is_file():
        return Tier.per_skill, p
    if marketplace is not None:
        evals = Path(marketplace) / ".aeval" / "evals"
        for suffix in (".config", ".config.json", ".config.yaml", ".config.yml"):
            p = evals / f"{skill.name}{suffix}"
            if p.is_file():
                return Tier.per_name, p
    return Tier.generic, None


def copy_problems(skill: Skill, config_path: Path | None = None,
                  config: EvalConfig | None = None) -> list[Problem]:
    """What aeval would refuse to copy, found before anything runs (`aeval.isolation.copying`): in
    the skill folder (a link out of it, a socket, too deep, too many entries) and in each case's
    `files` (also a path that does not exist, or resolves through a link out)."""
    problems = [Problem(str(skill.path), "", f"{rel!r} {why}")
                for rel, why in copy_entry(skill.path, ".", **skill_copy_rule(skill.left_out))]
    for i, case in enumerate(config.evals if config is not None else []):
        for j, f in enumerate(case.files):
            problems += [Problem(str(config_path), f"evals[{i}].files[{j}]",
                                 f"{f if rel == f.strip('/') else rel!r} {why}")
                         for rel, why in copy_entry(skill.path, f, depth=len(
                             PurePosixPath(f).parts))]
    return problems


def load_contract(skill: Skill, marketplace: Path | None) -> LoadedContract:
    """The three-tier fallback. Raises ContractError when the chosen file is broken, or
    when the skill or a case's `files` could not be copied whole (`copy_problems`)."""
    tier, path = find_contract(skill, marketplace)
    config = parse_config(path) if path is not None else generic_config(skill)
    problems = copy_problems(skill, path, config if path is not None else None)
    if problems:
        raise ContractError(problems)
    return LoadedContract(tier=tier, source=str(path) if path else None, config=config)


def find_marketplace(skill_dir: Path) -> Path | None:
    """The nearest folder above a skill that holds ``.aeval/evals`` (for the per-name tier)."""
    for d in Path(skill_dir).resolve().parents:
        if (d / ".aeval" / "evals").is_dir():
            return d
    return None
