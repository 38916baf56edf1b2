"""The provisioning phase for npm: the ``package.json`` dependencies of the JS/TS scripts a
skill's documented commands run, and the packages their ``npx`` fetches
(`aeval.isolation.provision.npm_declarations`), installed once per content before the
offline attempts that need them.

- **Where and how**: the same sandbox as the Python phase (`provisioning_sandbox`: the case's
  view, a private network whose one way out is the registry proxy): ``npm install`` of the
  dependencies into ``modules/node_modules``, and ``npm exec --yes --package=<spec> -- true``
  per npx tool, which fills npm's own npx cache (``home/.npm/_npx``) exactly as a reader's
  first ``npx <spec>`` does.
- **Cached by content** (`cached_build`): the key is the dependencies, the tools, node's and
  npm's versions and the platform.
- **In the attempt** (`link_into`, `attempt_env`): ``node_modules`` beside each declaring
  ``package.json`` of the skill copy is a link to the entry's (read-only; node resolves
  through it, ``import`` and ``require`` alike); the npm cache is copied into the
  attempt's HOME, so ``npx <spec>`` finds its install there, and the case stays offline
  (``npm_config_offline``).
- **What it cannot fetch** is named (``needs X (not on the package registry)``), left out,
  and the rest installed, as for Python.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

from aeval.adapters.sandbox.provision import (
    MAX_LEFT_OUT,
    NOT_ON_REGISTRY,
    PROVISION_TIMEOUT_S,
    cached_build,
    provisioning_env,
    provisioning_sandbox,
)
from aeval.isolation.provision import Provisioning, npm_declarations
from aeval.isolation.sandbox import SandboxMode
from aeval.isolation.shell import run_argv

# ``npm error 404  'aeval-absent@*' is not in this registry.`` / ``404 Not Found - GET .../x``
_NOT_FOUND = re.compile(r"404[^\n]*?'((?:@[\w.-]+/)?[\w.-]+)@[^']*' is not in this registry|"
                        r"404 Not Found - GET https?://\S+?/((?:@[\w.-]+(?:/|%2[fF]))?[\w.-]+)"
                        r"(?:/|\s|$)")
_UNREACHABLE = re.compile(r"ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|"
                          r"tunneling socket|socket hang up")


@functools.lru_cache(maxsize=1)
def npm_binary() -> str | None:
    """The host's ``npm`` (None: not installed, and nothing npm declares can be fetched)."""
    return shutil.which("npm", path=os.environ.get("PATH", os.defpath))


@functools.lru_cache(maxsize=1)
def node_versions() -> str:
    """``node --version`` and ``npm --version`` (part of the cache key)."""
    out = []
    for tool in ("node", "npm"):
        found = shutil.which(tool, path=os.environ.get("PATH", os.defpath))
        try:
            r = subprocess.run([found or tool, "--version"], capture_output=True, text=True,
                               timeout=60, stdin=subprocess.DEVNULL)
            out.append(f"{tool} {r.stdout.strip()}")
        except (OSError, subprocess.TimeoutExpired):
            out.append(f"{tool} none")
    return ", ".join(out)


def npm_key(deps: dict[str, str], tools: list[str]) -> str:
    blob = json.dumps(["aeval-provision-npm-1", node_versions(),
                       f"{sys.platform}-{platform.machine()}", sorted(deps.items()), tools])
    return hashlib.sha256(blob.encode()).hexdigest()


def system_ca_file() -> str | None:
    """The machine's CA bundle, which node (unlike pip, through truststore) does not read by
    itself: a TLS-inspecting proxy's CA lives there. ``NODE_EXTRA_CA_CERTS`` when set."""
    for path in (os.environ.get("NODE_EXTRA_CA_CERTS"), ssl.get_default_verify_paths().cafile,
                 "/etc/ssl/certs/ca-certificates.crt"):
        if path and os.path.isfile(path):
            return path
    return None


def _env(dest: Path) -> dict[str, str]:
    env = provisioning_env(dest / "home") | {
        "npm_config_update_notifier": "false", "npm_config_fund": "false",
        "npm_config_audit": "false", "npm_config_loglevel": "error"}
    ca = system_ca_file()
    if ca is not None:
        env["NODE_EXTRA_CA_CERTS"] = ca
    return env


def _reason(output: str, proxy_failed: bool) -> str:
    m = _NOT_FOUND.search(output)
    if m:
        name = (m.group(1) or m.group(2)).replace("%2f", "/").replace("%2F", "/")
        return f"needs {name} {NOT_ON_REGISTRY}"
    if proxy_failed or _UNREACHABLE.search(output):
        return "the package registry was unreachable"
    errors = [ln.strip() for ln in output.splitlines()
              if ("npm error" in ln or "ERR" in ln) and "complete log" not in ln]
    last = errors or [ln.strip() for ln in output.splitlines() if ln.strip()] or ["no output"]
    return f"npm said: {last[-1][:300]}"


def _npm(args: list[str], dest: Path, mode: SandboxMode) -> str | None:
    """``npm args`` in the provisioning sandbox; None when it worked, else why not."""
    npm = npm_binary()
    assert npm is not None
    env = _env(dest)
    with provisioning_sandbox([npm, *args], dest, env, mode) as (argv, proxy, guard):
        failures = proxy.failures if proxy is not None else 0
        r = run_argv(argv, dest, env, PROVISION_TIMEOUT_S, 64_000, label="provisioning",
                     guard=guard)
        proxy_failed = proxy is not None and proxy.failures > failures
    if r.timed_out:
        return f"fetching took longer than {PROVISION_TIMEOUT_S:.0f}s"
    if r.exceeded:
        return f"fetching {r.exceeded}"
    return None if r.exit_code == 0 else _reason(r.combined(), proxy_failed)


def _install(deps: dict[str, str], dest: Path, mode: SandboxMode) -> tuple[bool, list[str]]:
    """``npm install`` of ``deps`` into ``dest/modules``; a package the registry lacks is
    left out and the rest installed (up to `MAX_LEFT_OUT`). (installed, what is missing)."""
    deps, missing = dict(deps), []
    modules = dest / "modules"
    for _ in range(MAX_LEFT_OUT + 1):
        modules.mkdir(parents=True, exist_ok=True)
        (modules / "package.json").write_text(json.dumps(
            {"name": "aeval-provision", "private": True, "dependencies": deps}))
        why = _npm(["install", "--prefix", str(modules), "--no-package-lock", "--no-save"],
                   dest, mode) if deps else None
        if why is None:
            return True, missing
        lacking = why.split()[1] if why.endswith(NOT_ON_REGISTRY) else None
        if lacking not in deps:
            return False, [*missing, why]
        missing.append(why)
        deps.pop(lacking)
    return False, missing


def provision_npm(skill_dir: Path, commands: list[str], mode: SandboxMode
                  ) -> tuple[Provisioning | None, Path | None, list[str], bool]:
    """(the record, the cache entry, the skill-relative folders whose ``node_modules`` it
    provides, whether npx tools are in its npm cache); (None, None, [], False) when the
    commands declare nothing npm fetches."""
    declared, deps, tools, folders = npm_declarations(skill_dir, commands)
    if not deps and not tools:
        return None, None, [], False
    reqs = [f"{n}@{s}" for n, s in deps.items()] + [f"npx {t}" for t in tools]
    record = Provisioning(declared=declared, requirements=reqs, outcome="built",
                          key=npm_key(deps, tools))
    if npm_binary() is None:
        record.outcome, record.reason = "not provisioned", "needs npm"
        return record, None, [], False

    def build(tmp: Path) -> tuple[bool, str | None]:
        (tmp / "home").mkdir(parents=True, exist_ok=True)
        ok, missing = _install(deps, tmp, mode)
        if not ok:
            return False, "; ".join(missing)
        for spec in tools:  # npm's npx cache, filled as a reader's first ``npx <spec>`` does
            why = _npm(["exec", "--yes", f"--package={spec}", "--", "true"], tmp, mode)
            if why is not None:
                missing.append(why if why.endswith(NOT_ON_REGISTRY) else f"npx {spec}: {why}")
        shutil.rmtree(tmp / "home" / ".npm" / "_logs", ignore_errors=True)
        return True, "; ".join(missing) or None

    entry = cached_build(record, build)
    if entry is None:
        return record, None, [], False
    nm = entry / "modules" / "node_modules"
    record.packages = sorted(
        f"{p.parent.name}/{p.name}" if p.parent.name.startswith("@") else p.name
        for p in [*nm.glob("[!.@]*"), *nm.glob("@*/*")]) if nm.is_dir() else []
    record.packages += [f"npx {t}" for t in tools if f"needs {t.rsplit('@', 1)[0]}"
                        not in (record.reason or "")]
    return record, entry, folders if nm.is_dir() and deps else [], bool(tools)


def link_into(entry: Path, skill_copy: Path, home: Path, folders: list[str],
              npx: bool) -> None:
    """Before anything of the attempt runs: ``node_modules`` beside each declaring
    ``package.json`` of the fresh skill copy links to the entry's (unless the skill ships
    its own), and the entry's npm cache is copied into the attempt's fresh HOME."""
    root = skill_copy.resolve()
    for folder in folders:
        where = (skill_copy / folder).resolve()
        link = where / "node_modules"
        if where.is_relative_to(root) and where.is_dir() and not os.path.lexists(link):
            link.symlink_to(entry / "modules" / "node_modules", target_is_directory=True)
    cache = entry / "home" / ".npm"
    if npx and cache.is_dir() and not os.path.lexists(home / ".npm"):
        shutil.copytree(cache, home / ".npm", symlinks=True)


def attempt_env(network: bool) -> dict[str, str]:
    """npm in an offline attempt answers from its cache at once, without retrying a network
    it does not have."""
    env = {"npm_config_update_notifier": "false"}
    if not network:
        env["npm_config_offline"] = "true"
    return env
