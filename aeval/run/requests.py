"""The parameters of aeval's flows, one pydantic model each.

A flow takes one of these as its only parameter, so the Prefect UI's custom-run form shows
typed, described fields, a deployment's parameters are validated, and the command line,
the serve entrypoint and the tests build the same object.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from aeval.artifacts.case import Efficiency
from aeval.capabilities import MODEL_RUNTIMES, NO_MODEL_RUNTIMES, RUNTIME_NAMES
from aeval.isolation.sandbox import SandboxMode
from aeval.strict import StrictModel

RUNTIME_HELP = ("Runtimes to run every case on: builtin, claude-code, codex, opencode, literal, "
                "replay.")


class ModelChoice(StrictModel):
    """Which models execute and grade."""

    runtimes: list[str] = Field(["literal"], min_length=1, description=RUNTIME_HELP)
    model: str | None = Field(None, description="Executor model, a litellm model string "
                                                "(agent runtimes need one).")
    grader_model: str | None = Field(
        None, description="Grader, assertion writer, suggester and analyzer model. None: no "
                          "grader (natural-language assertions stay ungraded).")
    api_base: str | None = Field(None, description="Model API base URL, when not the "
                                                   "provider's default.")
    store: str = Field(".aeval", description="Run store folder (runs go to <store>/runs/).")

    @field_validator("runtimes")
    @classmethod
    def _known_runtimes(cls, value: list[str]) -> list[str]:
        unknown = [r for r in value if r not in RUNTIME_NAMES]
        if unknown:
            raise ValueError(f"unknown runtime {unknown[0]!r}; known: "
                             f"{', '.join(sorted(RUNTIME_NAMES))}")
        return value

    @model_validator(mode="after")
    def _model_for_agent_runtimes(self):
        needing = [r for r in self.runtimes if r in MODEL_RUNTIMES]
        if needing and not self.model:
            raise ValueError(f"runtime {needing[0]} needs a model (`model`: a litellm model "
                             "string); without one use the literal runtime")
        return self


class TaskRunnerChoice(StrictModel):
    """Where the case chains run: threads in the flow's process, or Dask."""

    concurrency: int = Field(4, ge=1, le=256, description="Case chains at once.")
    dask: str | None = Field(
        None, description="Run the case chains on Dask: `local` (a temporary local cluster, "
                          "mutual TLS on loopback) or a scheduler address tls://HOST:PORT "
                          "(Dask's TLS config; prefect-dask installed). None: a thread pool "
                          "of `concurrency` threads.")
    dask_allow_insecure_tcp: bool = Field(
        False, description="Accept a plain tcp:// Dask scheduler: anyone who can reach it runs "
                           "code on its workers as their user (deployments/README.md).")

    @field_validator("dask")
    @classmethod
    def _dask_address(cls, value: str | None) -> str | None:
        if value and value != "local" and "://" not in value:
            raise ValueError(f"{value!r}: expected 'local' or a scheduler address such as "
                             "tls://127.0.0.1:8786")
        return value or None

    @model_validator(mode="after")
    def _plain_tcp_named(self):
        plain = bool(self.dask) and self.dask != "local" and not self.dask.startswith(
            ("tls://", "wss://"))
        if plain and not self.dask_allow_insecure_tcp:
            raise ValueError(f"dask {self.dask}: a plain-TCP Dask scheduler runs whatever "
                             "anyone who reaches it sends; use tls://, or set "
                             "dask_allow_insecure_tcp to accept that risk")
        return self


class EvalRequest(ModelChoice):
    """Evaluate skills: the `aeval-evaluate` flow."""

    paths: list[str] = Field(["."], description="Skill folders or marketplace roots; every "
                                                "SKILL.md at or under them is evaluated.")
    skill_roots: list[str] | None = Field(
        None, description="Exactly these skill folders (change detection passes them); "
                          "`paths` then only names the repository.")
    run_id: str | None = Field(None, description="Run id; a new one when empty.")
    epochs: int = Field(1, ge=1, le=100, description="Runs of each case.")
    retries: int = Field(2, ge=0, le=10, description="Retries of a case after a transient "
                                                     "environment error (fresh workspace).")
    retry_delay_s: float = Field(2.0, ge=0, le=600, description="First retry delay in seconds; "
                                                                "doubles, with jitter.")
    keep_workspaces: bool = Field(False, description="Keep each attempt's workspace.")
    sandbox: SandboxMode = Field(
        "auto", description="bubblewrap around every process a case starts: auto (fall back "
                            "to no sandbox with a warning), require (refuse without), none.")
    output_cap: int = Field(16_000, gt=0, description="Characters kept of one tool output.")
    runtime_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Constructor options per runtime name.")
    base: str | None = Field(None, description="Base commit of a change (recorded in run.json).")
    head: str | None = Field(None, description="Head commit of a change.")
    baseline: str | None = Field(None, description="Run id or folder for regression.json "
                                                   "(default: the store's baselines).")
    resume: bool = Field(False, description="Finish run `run_id`: only cases without "
                                            "grading.json run.")
    recordings: dict[str, str] | None = Field(
        None, description="`skill/case` -> recorded case folder whose assertions are reused "
                          "(regrade). `skill` is the skill's run key or its folder.")
    fail_worse_than_base: bool = Field(
        False, description="In a comparison of head with base: a skill worse than its base "
                           "(the base won more case runs, or the head's cost is over 1.2x) "
                           "fails the gate (exit 1). Default: said, not a failure.")
    compared_with_base: bool = Field(
        False, description="The head run of a comparison with the base: its `recordings` are "
                           "the base run's assertions, whose structural assertions (S0-S3, "
                           "from the skill) are replaced with the head's own.")
    base_costs: dict[str, Efficiency] | None = Field(
        None, description="`skill/case#epoch` (`skill`: the skill's folder) -> what the base "
                          "version's passing attempt cost, in the head run of a comparison "
                          "with the base: the cases' relative budgets are written against "
                          "it.")
    install_skill: bool = Field(
        True, description="Install the skill (the normal run). False: the without-skill arm "
                          "of `aeval uplift`: same prompt, case files and assertions, but no "
                          "skill copy where the runtime discovers skills ($SKILL_DIR is an "
                          "empty folder), and only the assertions count, not S1-S3.")
    skill_md_doc_test: bool = Field(
        True, description="Under `literal`, also run SKILL.md's doc test beside a contract's "
                          "cases (the case `skill-md`), so SKILL.md cannot drift from the "
                          "scripts. False for `aeval compare`, whose rows must run the same "
                          "cases.")
    require_exercise: bool = Field(
        True, description="A case passes only when it exercised the skill (one of its files ran, "
                          "or was read by a call that succeeded); otherwise it is `untested: "
                          "nothing of the skill ran`. False for `aeval uplift`'s with-arm: "
                          "whether the agent uses the skill is what uplift measures.")
    require_tested: bool = Field(False, description="An untested case (nothing runnable for "
                                                    "its runtime) is a usage error, exit 2.")
    min_tested: int = Field(0, ge=0, description="Case runs that must be tested (passed or "
                                                 "failed) for the gate to pass: fewer is "
                                                 "exit 5. 0: a run that tested nothing exits "
                                                 "0, and says so.")
    skip_unchanged: bool = Field(
        False, description="Fingerprint every case run (skill files, case, runtime version, "
                           "models, epoch; aeval/run/fingerprint.py), reuse the last pass/fail "
                           "verdict of an unchanged one from the store's verdicts.json instead "
                           "of running it, and record the new verdicts (the sweep's default).")
    report_url: str | None = Field(
        None, description="Where the run folders are browsable, e.g. a web server over the "
                          "store's runs/ (the run id is appended): the Prefect run-summary "
                          "links there. None: AEVAL_REPORT_URL, else the GitLab CI job's "
                          "artifacts when run in a job, else no link (the path is shown).")
    post: bool = Field(False, description="Post the results on the merge or pull request.")
    forge: Literal["gitlab", "github"] | None = Field(
        None, description="Where `post` posts. None: GitLab when the merge request fields "
                          "below are given, else GitHub inside GitHub Actions (the pull "
                          "request from its event), else GitLab (from the CI variables).")
    mr_iid: int | None = Field(None, description="Merge request IID for `post` (a pull "
                                                 "request's number with `forge` github).")
    project_id: str | None = Field(None, description="GitLab project id or path for `post` "
                                                     "(owner/name with `forge` github).")
    gitlab_url: str | None = Field(None, description="GitLab URL for `post` (the REST API "
                                                     "root with `forge` github).")

    @field_validator("runtimes")
    @classmethod
    def _no_duplicates(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class MrRequest(ModelChoice, TaskRunnerChoice):
    """Evaluate what a merge request changed: the `aeval-mr` flow. The flow clones `repo`
    for this run alone and checks out `head` there (fetching it, and the MR's
    refs/merge-requests/<iid>/head, when the clone lacks it): whatever the serving side has
    checked out never stands in for the MR's code, and two MRs at once never share a tree."""

    repo: str = Field(..., min_length=1,
                      description="The marketplace repository: a git URL or a path on the "
                                  "serving side (cloned per run; its working tree is never "
                                  "used).")
    base: str = Field(..., min_length=1,
                      description="Base commit (or ref) of the MR: `git diff base...head`.")
    head: str = Field(..., min_length=1, description="Head commit (or ref) of the MR: what "
                                                     "is evaluated.")
    mr_iid: int | None = Field(None, description="Merge request IID (for `post`, and to "
                                                 "fetch a head the clone lacks).")
    post: bool = Field(False, description="Post the results on the merge request.")
    project_id: str | None = Field(None, description="GitLab project id or path for `post`.")
    gitlab_url: str | None = Field(None, description="GitLab URL for `post`.")
    report_url: str | None = Field(None, description="Where the run folders are browsable "
                                                     "(the run id is appended): the link in "
                                                     "the Prefect artifacts and MR notes.")
    compare_base: bool = Field(
        False, description="Also run the changed skills as they were at the merge base, on "
                           "the same cases, and compare head with base case by case (a "
                           "comparative grader in both orders; head_vs_base.json). Changes "
                           "the gate only with `fail_worse_than_base`.")
    fail_worse_than_base: bool = Field(
        False, description="With compare_base: a skill worse than its base fails the gate "
                           "(exit 1).")


class SweepRequest(ModelChoice, TaskRunnerChoice):
    """Evaluate a whole marketplace and refresh the baselines: the `aeval-sweep` flow."""

    marketplace: str = Field(..., min_length=1,
                             description="The marketplace to sweep: a folder, or a git URL "
                                         "(cloned per run at `ref`). Required: there is no "
                                         "default folder.")
    ref: str | None = Field(None, description="Branch, tag or commit of a git `marketplace` "
                                              "(default: its default branch).")
    epochs: int = Field(3, ge=1, le=100, description="Runs of each case.")
    run_id: str | None = Field(None, description="Run id; a new one when empty.")
    retries: int = Field(2, ge=0, le=10, description="Retries of a case after a transient "
                                                     "environment error (AEVAL_RETRIES).")
    retry_delay_s: float = Field(2.0, ge=0, le=600, description="First retry delay in seconds; "
                                                                "doubles each retry "
                                                                "(AEVAL_RETRY_DELAY_S).")
    min_tested: int = Field(0, ge=0, description="Case runs that must be tested (passed or "
                                                 "failed, a reused verdict included) for the "
                                                 "sweep to pass: fewer ends the flow run "
                                                 "Failed, exit 5. 0: a sweep that tested "
                                                 "nothing ends Completed as `NothingTested`.")
    skip_unchanged: bool = Field(
        True, description="Reuse the last pass/fail verdict of a case run whose fingerprint "
                          "did not change (`--no-skip`: run everything).")
    report_url: str | None = Field(None, description="Where the run folders are browsable "
                                                     "(the run id is appended).")
    resume: bool = Field(False, description="Finish sweep run `run_id`: only its cases "
                                            "without grading.json run, then the baselines "
                                            "refresh; its first flow runs (the sweep's and "
                                            "its evaluate's) end as the resumed sweep does.")

    @field_validator("marketplace")
    @classmethod
    def _named(cls, value: str) -> str:
        if "{{" in value:  # a prefect.yaml placeholder whose variable was not set at deploy
            raise ValueError(f"{value!r} is an unfilled placeholder: set AEVAL_MARKETPLACE "
                             "when running `prefect deploy`, or pass `marketplace`")
        return value


class UpliftRequest(ModelChoice):
    """Does the skill help? Every case run with and without the skill: the `aeval-uplift`
    flow (two evaluate runs, `<uplift_id>-with` and `<uplift_id>-without`)."""

    runtimes: list[str] = Field(["builtin"], min_length=1,
                                description="Agent runtimes to compare on (not literal or "
                                            "replay: they do not use the skill as an agent "
                                            "would).")
    paths: list[str] = Field(["."], description="Skill folders or marketplace roots.")
    skill_roots: list[str] | None = Field(None, description="Exactly these skill folders.")
    uplift_id: str | None = Field(None, description="Uplift id; a new one when empty.")
    epochs: int = Field(3, ge=1, le=100, description="Runs of each case in each arm.")
    alpha: float = Field(0.05, gt=0, lt=1, description="Significance level of the McNemar "
                                                        "test.")
    concurrency: int = Field(4, ge=1, le=256, description="Case chains at once in each arm.")
    retries: int = Field(2, ge=0, le=10, description="Retries of a case after a transient "
                                                     "environment error.")
    retry_delay_s: float = Field(2.0, ge=0, le=600, description="First retry delay in seconds.")
    keep_workspaces: bool = Field(False, description="Keep each attempt's workspace.")
    sandbox: SandboxMode = Field("auto", description="auto | require | none (--sandbox).")
    output_cap: int = Field(16_000, gt=0, description="Characters kept of one tool output.")

    @field_validator("runtimes")
    @classmethod
    def _agent_runtimes(cls, value: list[str]) -> list[str]:
        bad = [r for r in value if r in NO_MODEL_RUNTIMES]
        if bad:
            raise ValueError(f"uplift needs an agent runtime, not {', '.join(bad)}: without "
                             "a model nothing chooses whether to use the skill")
        return list(dict.fromkeys(value))

    def with_id(self) -> UpliftRequest:
        """This request with an uplift id (a new one when empty)."""
        from aeval.run.store import new_run_id

        return self if self.uplift_id else self.model_copy(update={"uplift_id": new_run_id()})
