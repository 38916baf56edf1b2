"""The `aeval` command line: the parser and `main`. Each command's options are defined
beside the command, in ``evaluate.py`` (run, sweep, compare, regrade), ``info.py``
(validate, schema, runtimes, show), ``init.py`` (init), ``trigger_accuracy.py``
(trigger-accuracy), ``server.py`` (server),
``trigger_deployment.py`` (trigger), ``uplift.py`` (uplift) and ``post.py`` (post); this
module only registers them. What they print is in ``console.py``; the options they run with
are resolved once, in ``options.py``.

Exit codes of `run` (first match wins): `aeval.exit_codes`, the one table the gate, the
``--help`` epilog and docs/statuses-and-exit-codes.md share; 4 (aeval itself failed: one
line, the traceback with -v) applies to every command.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from aeval.deployments.cli import (
    evaluate,
    info,
    init,
    post,
    server,
    trigger_accuracy,
    trigger_deployment,
    uplift,
)
from aeval.deployments.cli._common import EPILOG, EXIT_INTERNAL, EXIT_USAGE
from aeval.deployments.cli.console import QuietPipe, inert, prefect_env
from aeval.exit_codes import ENVIRONMENT, INTERRUPTED
from aeval.isolation.hardening import harden_process, limit_malloc_arenas
from aeval.tasks._engine.servers.home import EmbeddedServerError

COMMANDS = (
    info.add_validate_parser,
    info.add_schema_parser,
    evaluate.add_sweep_parser,
    evaluate.add_compare_parser,
    evaluate.add_regrade_parser,
    uplift.add_parser,  # with and without the skill, paired
    info.add_runtimes_parser,
    post.add_parser,
    trigger_deployment.add_parser,  # the MR deployment from CI, with its gate
    trigger_accuracy.add_parser,
    info.add_show_parser,
    server.add_parser,  # the local Prefect server and warm process runs leave
)
"""After `run`, the commands in the order ``aeval --help`` lists them; `init` comes last
(it parses its first run with `run`'s parser). Each module owns its commands' options."""


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: an unknown flag is reported with this subcommand's usage
    (`aeval run --modle x` shows `usage: aeval run ...`), not the top-level one."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def build_parser() -> argparse.ArgumentParser:
    """The `aeval` parser: the program's options, then each command's subparser, added by
    the module that runs it."""
    p = argparse.ArgumentParser(
        prog="aeval", description="Test agent skills deterministically: install, execute, "
        "grade the first attempt, suggest grounded fixes.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"aeval {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    run = evaluate.add_run_parser(sub)
    for add_parser in COMMANDS:
        add_parser(sub)
    init.add_parser(sub, run_parser=run)
    return p


def _version() -> str:
    from aeval import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    """Parse, dispatch, return the exit code. Output to a closed pipe ends quietly; a Prefect
    server that did not come up prints one line naming the setting and exits 3; an
    unexpected exception prints one line (the traceback with -v) and exits 4."""
    limit_malloc_arenas()  # before any thread starts
    parser = build_parser()
    args = parser.parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    prefect_env(verbose)  # before any command imports Prefect
    harden_process()
    saved, sys.stdout = sys.stdout, QuietPipe(sys.stdout)
    try:
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        return args.func(args)
    except KeyboardInterrupt:
        print("aeval: interrupted", file=sys.stderr)
        return INTERRUPTED
    except EmbeddedServerError as exc:  # the machine, not aeval: one line, exit 3
        print(f"aeval: {inert(str(exc)).strip().splitlines()[0][:400]}", file=sys.stderr)
        return ENVIRONMENT
    except Exception as exc:  # the last line of defence: one line, exit 4
        if verbose:
            traceback.print_exc()
        detail = inert(str(exc)).strip().splitlines()
        print(f"aeval: internal error: {type(exc).__name__}"
              f"{': ' + detail[0][:300] if detail else ''}"
              f"{'' if verbose else '; rerun with -v for the traceback'}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        sys.stdout.flush()
        sys.stdout = saved


if __name__ == "__main__":  # the program, as `aeval` runs it (aeval.deployments.program)
    from aeval.deployments.program import run

    run()
