"""What a skill script accepts, read from its source (aeval.skill.script_interface)."""

from __future__ import annotations

from textwrap import dedent

import pytest

from aeval.skill.script_interface import read_interface

ARGPARSE_SUBCOMMANDS = dedent("""\
    import argparse

    def main():
        p = argparse.ArgumentParser(description="Segmentation runner")
        p.add_argument("-v", "--verbose", action="store_true")
        sub = p.add_subparsers(dest="command", required=True)
        train = sub.add_parser("train", aliases=["fit"], help="train a model")
        train.add_argument("--data", required=True)
        train.add_argument("--epochs", type=int, default=10)
        train.add_argument("--cache", action=argparse.BooleanOptionalAction)
        infer = sub.add_parser("infer")
        infer.add_argument("--out")
        args = p.parse_args()

    if __name__ == "__main__":
        main()
    """)


def test_argparse_subcommands_and_options():
    i = read_interface(ARGPARSE_SUBCOMMANDS, ".py")
    assert i.actions == {"train", "fit", "infer"}
    assert not i.rejects_action("fit") and i.rejects_action("segment_train")
    assert not i.rejects_option("--epoch")  # argparse accepts a unique prefix
    assert not i.rejects_option("--no-cache") and not i.rejects_option("-v")
    assert i.rejects_option("--gpus") and i.rejects_option("--e") is False
    assert not i.rejects_option("--help") and not i.rejects_option("-1")


def test_an_action_table_indexed_by_the_first_positional():
    src = dedent("""\
        import argparse
        ACTIONS = {"train": lambda a: 0, "evaluate": lambda a: 0}
        p = argparse.ArgumentParser()
        p.add_argument("action")
        p.add_argument("--data")
        args = p.parse_args()
        ACTIONS[args.action](args)
        """)
    i = read_interface(src, ".py")
    assert i.actions == {"train", "evaluate"} and i.rejects_action("segment_train")


@pytest.mark.parametrize("src", [
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--x')\n"
    "a, rest = p.parse_known_args()\n",
    "import argparse\nfrom common import add_io\np = argparse.ArgumentParser()\nadd_io(p)\n"
    "p.parse_args()\n",
    "import argparse\nbase = argparse.ArgumentParser(add_help=False)\n"
    "p = argparse.ArgumentParser(parents=[base])\np.parse_args()\n",
])
def test_options_are_not_judged_when_the_parser_may_learn_more(src):
    i = read_interface(src, ".py")
    assert i is not None and i.options is None and not i.rejects_option("--anything")


def test_sys_argv_dispatch():
    table = "import sys\nCOMMANDS = {'summary': 1, 'count': 2}\n" \
            "def main():\n    COMMANDS[sys.argv[1]]\n"
    assert read_interface(table, ".py").actions == {"summary", "count"}
    chain = dedent("""\
        import sys
        action = sys.argv[1]
        if action == "summary":
            pass
        elif action in ("median", "mode"):
            pass
        else:
            sys.exit("unknown action " + action)
        """)
    assert read_interface(chain, ".py").actions == {"summary", "median", "mode"}
    open_ended = "import sys\naction = sys.argv[1]\nif action == 'a':\n    pass\n"
    assert read_interface(open_ended, ".py") is None  # no else that refuses the rest


def test_click_group():
    src = dedent("""\
        import click

        @click.group()
        def cli():
            pass

        @cli.command()
        @click.option("--rows", "-r", type=int)
        def show_rows(rows):
            pass

        @cli.command("dump")
        def dump_all():
            pass
        """)
    i = read_interface(src, ".py")
    assert i.actions == {"show-rows", "dump"} and i.rejects_action("show_rows")
    assert not i.rejects_option("--rows") and i.rejects_option("--row")


def test_shell_case_dispatch_after_an_option_loop():
    src = dedent("""\
        #!/usr/bin/env bash
        set -euo pipefail
        while [ $# -gt 0 ]; do
          case "$1" in
            --port) PORT=$2; shift 2 ;;
            -h|--help) usage; exit 0 ;;
            *) break ;;
          esac
        done
        cmd="${1:-}"
        case "$cmd" in
          start|up) start_server ;;
          stop) stop_server ;;
          *) echo "usage: serve.sh start|stop" >&2; exit 1 ;;
        esac
        """)
    assert read_interface(src, ".sh").actions == {"start", "up", "stop"}
    globbed = 'case "$1" in\n  build-*) ;;\n  clean) ;;\nesac\n'
    assert read_interface(globbed, ".sh") is None


def test_unreadable_sources_are_unknown():
    assert read_interface("def broken(:\n", ".py") is None
    assert read_interface("x = 1\n", ".py") is None
    assert read_interface("console.log(1)", ".js") is None
