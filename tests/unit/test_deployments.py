"""The deployment definitions: every prefect.yaml entrypoint names a real flow, prefect.yaml
and the serve entrypoint agree, parameters fit the flows; and the task-runner choice."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from prefect import Flow
from prefect.flows import load_flow_from_entrypoint
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.callables import parameter_schema

from aeval.deployments.serve import (
    DEPLOYMENTS,
    NIGHTLY_CRON,
    POOL_SUFFIX,
    TAGS,
    build_parser,
    nightly_parameters,
    runner_deployments,
)
from aeval.tasks._engine.runners import INSTALL_HINT, local_cluster_kwargs, task_runner

ROOT = Path(__file__).resolve().parents[2]
PREFECT_YAML = ROOT / "deployments" / "prefect.yaml"


def yaml_deployments() -> list[dict]:
    return yaml.safe_load(PREFECT_YAML.read_text())["deployments"]


def yaml_ids() -> list[str]:
    return [d["name"] for d in yaml_deployments()]


def spec_of(yaml_name: str):
    """The DEPLOYMENTS entry a prefect.yaml deployment (``<name>-pool``) repeats."""
    return next(s for s in DEPLOYMENTS if s.name + POOL_SUFFIX == yaml_name)


# ---- prefect.yaml ---------------------------------------------------------------------------


def test_prefect_yaml_is_valid_for_prefect_deploy():
    """The same model `prefect deploy` validates the file with (a private module: if a Prefect
    upgrade moves it, update the import)."""
    from prefect.cli.deploy._models import PrefectYamlModel

    raw = yaml.safe_load(PREFECT_YAML.read_text())
    model = PrefectYamlModel.model_validate(raw)
    assert [d.name for d in model.deployments] == ["mr-pool", "nightly-pool"]
    assert all(d.work_pool and d.work_pool.name == "aeval" for d in model.deployments)
    (step,) = raw["pull"]  # only where a relative run store lands: no checkout of aeval
    assert step == {"prefect.deployments.steps.set_working_directory": {
        "directory": "{{ $AEVAL_WORKDIR }}"}}


@pytest.mark.parametrize("name", yaml_ids())
def test_every_entrypoint_imports_and_names_a_flow(name: str):
    """Module entrypoints (aeval is installed): they load from anywhere, no checkout."""
    dep = next(d for d in yaml_deployments() if d["name"] == name)
    assert ":" not in dep["entrypoint"] and dep["entrypoint"].startswith("aeval.flows.")
    loaded = load_flow_from_entrypoint(dep["entrypoint"], use_placeholder_flow=False)
    assert isinstance(loaded, Flow)
    spec = spec_of(name)
    assert spec.flow() is loaded
    assert spec.full_name == f"{loaded.name}/{spec.name}"


@pytest.mark.parametrize("name", yaml_ids())
def test_parameters_fit_the_flow_signature(name: str):
    dep = next(d for d in yaml_deployments() if d["name"] == name)
    flow = spec_of(name).flow()
    params = dep.get("parameters", {})
    if not params:  # the MR deployment: every run brings its own request
        return
    unknown = set(params) - set(inspect.signature(flow.fn).parameters)
    assert not unknown, f"{name}: {sorted(unknown)} are not parameters of {flow.name}"
    # pydantic, against the annotations, as `prefect deploy` fills {{ $AEVAL_MARKETPLACE }}
    from prefect.utilities.templating import apply_values

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AEVAL_MARKETPLACE", "/srv/mp")
        flow.validate_parameters(apply_values(params, {}))
    # ... and the JSON schema the server enforces for `prefect deployment run --param`
    schema = parameter_schema(flow.fn).model_dump_for_openapi()
    jsonschema.validate(params, schema)
    required = set(schema.get("required", []))
    assert required <= set(params), f"{name}: required parameters without a value"
    request = params["request"]
    assert request["marketplace"] == "{{ $AEVAL_MARKETPLACE }}", "no default marketplace"


def test_prefect_yaml_and_serve_define_the_same_deployments():
    from_yaml = {d["name"]: d for d in yaml_deployments()}
    assert list(from_yaml) == [s.name + POOL_SUFFIX for s in DEPLOYMENTS]
    for spec in DEPLOYMENTS:
        d = from_yaml[spec.name + POOL_SUFFIX]
        assert d["entrypoint"] == spec.entrypoint
        expected = (nightly_parameters("{{ $AEVAL_MARKETPLACE }}") if spec.name == "nightly"
                    else spec.parameters)
        assert d.get("parameters", {}) == expected, spec.name
        crons = [s["cron"] for s in d.get("schedules") or []]
        assert crons == ([spec.cron] if spec.cron else []), spec.name
        assert d["tags"] == list(TAGS)
        assert " ".join(d["description"].split()) == spec.description


def test_the_documented_deployments():
    """What CI and the README rely on."""
    names = {s.full_name: s for s in DEPLOYMENTS}
    assert set(names) == {"aeval-mr/mr", "aeval-sweep/nightly"}
    assert names["aeval-mr/mr"].parameters == {}  # repo, base and head come with each run
    nightly = names["aeval-sweep/nightly"]
    assert nightly.cron == NIGHTLY_CRON == "0 2 * * *"
    assert nightly.parameters["request"]["epochs"] == 3
    assert "marketplace" not in nightly.parameters["request"], "no default marketplace"


# ---- the serve entrypoint -------------------------------------------------------------------


def test_serve_without_a_marketplace_serves_no_nightly():
    assert [d.name for d in runner_deployments()] == ["mr"]


@pytest.mark.parametrize("schedule", [True, False])
def test_serve_builds_the_runner_deployments(schedule: bool):
    deps = {d.name: d for d in runner_deployments(schedule=schedule, marketplace="/srv/mp")}
    assert set(deps) == {s.name for s in DEPLOYMENTS}
    for spec in DEPLOYMENTS:
        d = deps[spec.name]
        assert d.flow_name == spec.flow().name
        assert d.entrypoint == spec.entrypoint  # a module path
        assert d.parameters == (nightly_parameters("/srv/mp") if spec.name == "nightly"
                                else spec.parameters)
        assert d.tags == list(TAGS)
        crons = [s.schedule.cron for s in d.schedules or []]
        assert crons == ([spec.cron] if spec.cron and schedule else [])
        if d.parameters:  # the MR deployment has none: each run brings its request
            jsonschema.validate(d.parameters,
                                d._parameter_openapi_schema.model_dump_for_openapi())


def test_serve_command_line():
    assert build_parser().parse_args(["--no-schedule"]).no_schedule is True
    assert build_parser().parse_args([]).no_schedule is False
    assert build_parser().parse_args(["--marketplace", "/m"]).marketplace == "/m"


# ---- task runners ---------------------------------------------------------------------------


def test_default_runner_is_a_bounded_thread_pool():
    runner = task_runner(3, None)
    assert isinstance(runner, ThreadPoolTaskRunner)
    assert runner._max_workers == 3


@pytest.mark.parametrize("bad", ["localhost:8786", "yes"])
def test_a_bad_dask_address_is_a_usage_error(bad: str):
    with pytest.raises(ValueError, match="tcp://"):
        task_runner(2, bad)


def test_concurrency_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        task_runner(0, None)


def test_missing_prefect_dask_names_the_extra(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "prefect_dask", None)  # import fails as if not installed
    with pytest.raises(ImportError) as info:
        task_runner(2, "local")
    assert INSTALL_HINT == "pip install 'aeval-skills[dask]'"
    assert str(info.value) == f"--dask needs prefect-dask: {INSTALL_HINT}"


def test_a_remote_scheduler_needs_a_prefect_server(monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("prefect_dask")
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}), pytest.raises(
            ValueError, match="PREFECT_API_URL"):
        task_runner(2, "tls://127.0.0.1:8786")
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:4200/api"}):
        runner = task_runner(2, "tls://127.0.0.1:8786")
    assert runner.address == "tls://127.0.0.1:8786"


def test_a_plain_tcp_scheduler_needs_the_option_that_names_the_risk():
    """Issue 42: whoever reaches a plain-TCP Dask scheduler runs code on its workers."""
    pytest.importorskip("prefect_dask")
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from aeval.tasks._engine.runners import INSECURE_OPTION

    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:4200/api"}):
        for address in ("tcp://127.0.0.1:8786", "ws://127.0.0.1:8786"):
            with pytest.raises(ValueError) as info:
                task_runner(2, address)
            assert INSECURE_OPTION in str(info.value) and "\n" not in str(info.value)
            runner = task_runner(2, address, allow_insecure_tcp=True)
            assert runner.address == address
        for dask in ("local", "tls://127.0.0.1:8786", None):  # nothing to allow there
            with pytest.raises(ValueError, match=INSECURE_OPTION):
                task_runner(2, dask, allow_insecure_tcp=True)


def test_requests_refuse_a_plain_tcp_scheduler_unless_allowed():
    from pydantic import ValidationError

    from aeval.run.requests import SweepRequest

    with pytest.raises(ValidationError, match="dask_allow_insecure_tcp"):
        SweepRequest(marketplace=".", dask="tcp://10.0.0.5:8786")
    assert SweepRequest(marketplace=".", dask="tcp://10.0.0.5:8786",
                        dask_allow_insecure_tcp=True).dask_allow_insecure_tcp
    assert SweepRequest(marketplace=".", dask="tls://10.0.0.5:8786").dask
    assert SweepRequest(marketplace=".", dask="local").dask == "local"


def test_local_dask_runner():
    pytest.importorskip("prefect_dask")
    runner = task_runner(4, "local")
    assert runner.cluster_kwargs["processes"] is True
    # the local cluster's workers run the same preload hooks as a remote worker started as
    # the README says (`dask worker ... --preload aeval.flows.runners`)
    import importlib

    [preload] = runner.cluster_kwargs["preload"]
    hooks = importlib.import_module(preload)
    documented = importlib.import_module("aeval.flows.runners")
    assert hooks.dask_setup is documented.dask_setup
    assert hooks.dask_teardown is documented.dask_teardown
    assert runner.cluster_kwargs["security"] is True  # Security.temporary(): mutual TLS
    assert runner.cluster_kwargs["host"] == "127.0.0.1"
    assert type(runner.duplicate()) is type(runner)  # the flow engine runs a duplicate


@pytest.mark.parametrize(("concurrency", "cpus", "workers", "threads"),
                         [(4, 2, 2, 2), (1, 8, 1, 1), (3, 2, 2, 1), (8, 16, 8, 1)])
def test_local_cluster_slots_stay_within_concurrency(concurrency, cpus, workers, threads):
    kw = local_cluster_kwargs(concurrency, cpus=cpus)
    assert (kw["n_workers"], kw["threads_per_worker"]) == (workers, threads)
    assert kw["n_workers"] * kw["threads_per_worker"] <= concurrency
    assert kw["host"] == "127.0.0.1" and kw["dashboard_address"].startswith("127.0.0.1:")


@pytest.mark.parametrize("flow_path", ["aeval.flows.evaluate:evaluate",
                                       "aeval.flows.mr:evaluate_mr",
                                       "aeval.flows.sweep:sweep"])
def test_each_flow_takes_one_typed_described_request(flow_path: str):
    """The Prefect UI's custom-run form: one parameter, a pydantic model whose every field has
    a type and a description."""
    import importlib

    module, _, name = flow_path.partition(":")
    flow = getattr(importlib.import_module(module), name)
    schema = parameter_schema(flow.fn).model_dump_for_openapi()
    assert list(schema["properties"]) == ["request"]
    ref = schema["properties"]["request"]["$ref"].rsplit("/", 1)[1]
    fields = schema["definitions"][ref]["properties"]
    assert len(fields) >= 6
    for field, spec in fields.items():
        assert spec.get("description"), f"{ref}.{field} has no description"
        assert "type" in spec or "anyOf" in spec or "$ref" in spec, f"{ref}.{field} untyped"


def test_the_ci_template_sends_a_valid_mr_request():
    """The aeval-prefect job's `aeval trigger` line, expanded with CI's variables as bash
    would, parses with trigger's own parser into a valid MrRequest."""
    import shlex
    import subprocess

    from aeval.deployments.cli.main import build_parser
    from aeval.run.requests import MrRequest

    ci = list(yaml.safe_load_all((ROOT / "deployments" / "gitlab" /
                                  "aeval.gitlab-ci.yml").read_text()))[1]
    (command,) = ci["aeval-prefect"]["script"]
    env = {k: v for k, v in ci["variables"].items() if "$[[" not in v} | {
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": "1234567", "CI_COMMIT_SHA": "89abcde",
        "CI_MERGE_REQUEST_IID": "7", "CI_PROJECT_ID": "42", "CI_PROJECT_URL":
        "https://gitlab.example.com/g/mp", "CI_SERVER_URL": "https://gitlab.example.com",
        "PATH": "/usr/bin:/bin"}
    env = {k: v.replace("${CI_PROJECT_URL}", env["CI_PROJECT_URL"]) for k, v in env.items()}
    argv = subprocess.run(["bash", "-c", "printf '%s\\0' " + command.split(" ", 1)[1]],
                          env=env, capture_output=True, text=True, check=True).stdout
    args = build_parser().parse_args(argv.split("\0")[:-1])
    assert args.command == "trigger", shlex.join(argv.split("\0"))
    req = MrRequest(repo=args.repo, base=args.base, head=args.head, mr_iid=args.mr,
                    project_id=args.project, post=args.post == "true")
    assert (req.base, req.head, req.mr_iid, req.project_id) == ("1234567", "89abcde", 7, "42")
    assert req.repo == "https://gitlab.example.com/g/mp.git" and req.post is False
    assert args.timeout == 3000


def test_the_readme_runs_the_nightly_by_hand_with_the_name_serve_gives_it(tmp_path):
    """deployments/README.md's one command for a manual nightly names the deployment that
    `serve --marketplace` creates (flow name / deployment name), and the pool's one."""
    import re

    readme = (ROOT / "deployments" / "README.md").read_text()
    commands = re.findall(r"^prefect deployment run '([^']+)'", readme, re.M)
    assert commands, "no `prefect deployment run` command in deployments/README.md"
    [nightly] = [d for d in runner_deployments(marketplace=str(tmp_path)) if d.name == "nightly"]
    assert commands[0] == f"{nightly.flow_name}/{nightly.name}"
    assert f"{nightly.flow_name}/{nightly.name}{POOL_SUFFIX}" in readme
