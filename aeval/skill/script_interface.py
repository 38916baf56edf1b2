"""What a skill's own script accepts, read from its source without running it: the
subcommands (actions) and the options. Pure: text in, an interface (or "unknown") out.

Read only where the answer is certain enough to fail a skill on:

- Python ``argparse``: ``add_parser("name", aliases=[...])`` subcommands; the first
  positional's ``choices``; every ``add_argument`` option string (abbreviations of long
  options accepted, as argparse does by default). Options are not judged when the parser
  might learn more elsewhere (``parse_known_args``, ``parents=``, the parser handed to a
  function of another module).
- Python ``click``: ``@<group>.command()`` names (``_`` as ``-``) and ``@click.option``s.
- Python ``sys.argv`` dispatch: a module-level dict of actions indexed by ``sys.argv[1]``
  (or a name taken from it), or an if-chain of ``== "action"`` tests whose ``else`` exits.
- Shell: ``case "$1" in a) ... ;; b|c) ... ;; esac`` (or a variable set from ``$1``).

Anything else is unknown, and the doc test (which runs the documented line) decides.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

MAX_SOURCE = 1_000_000


@dataclass(frozen=True)
class Interface:
    """The actions and options a script accepts (None: cannot be told from its source)."""

    actions: frozenset[str] | None = None
    options: frozenset[str] | None = None
    abbreviations: bool = True  # argparse accepts unique prefixes of long options
    source: str = ""  # how it was read: argparse, click, sys.argv, case

    def rejects_action(self, action: str) -> bool:
        return self.actions is not None and action not in self.actions

    def rejects_option(self, option: str) -> bool:
        if self.options is None or option in ("-h", "--help") or re.match(r"^-\d", option):
            return False
        if option in self.options:
            return False
        if option.startswith("--") and self.abbreviations:
            return sum(1 for o in self.options if o.startswith(option)) != 1
        if re.fullmatch(r"-[A-Za-z]{2,}", option):  # -abc: a cluster of short flags
            return not all(f"-{c}" in self.options for c in option[1:])
        if re.fullmatch(r"-[A-Za-z].+", option):  # -n5: a short option with its value
            return option[:2] not in self.options
        return True


@dataclass
class _Argparse:
    subcommands: set[str] = field(default_factory=set)
    choices: set[str] | None = None
    first_dest: str | None = None  # the main parser's first positional
    options: set[str] = field(default_factory=set)
    complete: bool = True
    parser_names: set[str] = field(default_factory=set)
    abbrev: bool = True
    found: bool = False


def _strs(node: ast.AST) -> list[str] | None:
    if isinstance(node, ast.List | ast.Tuple | ast.Set) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _argparse(tree: ast.Module) -> _Argparse:
    ap = _Argparse()
    local_defs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and _call_name(node.value) in ("ArgumentParser", "add_parser"):
            ap.parser_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    first_positional_done = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if name == "ArgumentParser":
            ap.found = True
            if "parents" in kw:
                ap.complete = False
            a = kw.get("allow_abbrev")
            if isinstance(a, ast.Constant) and a.value is False:
                ap.abbrev = False
        elif name == "parse_known_args":
            ap.complete = False
        elif name == "add_parser" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            ap.subcommands.add(node.args[0].value)
            ap.subcommands.update(_strs(kw["aliases"]) or [] if "aliases" in kw else [])
        elif name == "add_parser":
            ap.complete = False
            ap.subcommands.add("\0dynamic")
        elif name == "add_argument":
            flags = [a.value for a in node.args if isinstance(a, ast.Constant)
                     and isinstance(a.value, str)]
            if len(flags) != len(node.args) or any(isinstance(a, ast.Starred) for a in node.args):
                ap.complete = False
                continue
            opts = [f for f in flags if f.startswith("-")]
            ap.options.update(opts)
            action = kw.get("action")
            if isinstance(action, ast.Attribute) and action.attr == "BooleanOptionalAction":
                ap.options.update("--no-" + o[2:] for o in opts if o.startswith("--"))
            if not opts and not first_positional_done:
                first_positional_done = True
                if flags and isinstance(node.func, ast.Attribute) and isinstance(
                        node.func.value, ast.Name) and _is_main_parser(tree, node.func.value.id):
                    ap.first_dest = flags[0].replace("-", "_")
                choices = _strs(kw["choices"]) if "choices" in kw else None
                if choices is not None and isinstance(node.func, ast.Attribute) \
                        and isinstance(node.func.value, ast.Name) \
                        and _is_main_parser(tree, node.func.value.id):
                    ap.choices = set(choices)
        elif isinstance(node.func, ast.Name) and node.func.id not in local_defs and any(
                isinstance(a, ast.Name) and a.id in ap.parser_names for a in node.args):
            ap.complete = False  # the parser handed to code elsewhere may gain options
    return ap


def _module_dicts(tree: ast.Module) -> dict[str, set[str]]:
    """Module-level dict literals whose keys are all strings (action tables)."""
    dicts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and node.value.keys \
                and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                        for k in node.value.keys):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    dicts[t.id] = {k.value for k in node.value.keys}  # type: ignore[union-attr]
    return dicts


def _dispatched(tree: ast.Module, is_action) -> frozenset[str] | None:
    """The keys of an action table indexed by the action (``ACTIONS[action](...)``)."""
    dicts = _module_dicts(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id in dicts and is_action(node.slice):
            return frozenset(dicts[node.value.id])
    return None


def _is_main_parser(tree: ast.Module, var: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and _call_name(node.value) == "ArgumentParser" \
                and any(isinstance(t, ast.Name) and t.id == var for t in node.targets):
            return True
    return False


def _click(tree: ast.Module) -> Interface | None:
    commands: set[str] = set()
    options: set[str] = set()
    group = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            call = dec if isinstance(dec, ast.Call) else None
            func = call.func if call else dec
            if not isinstance(func, ast.Attribute):
                continue
            if func.attr == "group" and isinstance(func.value, ast.Name) \
                    and func.value.id == "click":
                group = True
            elif func.attr == "command" and not (isinstance(func.value, ast.Name)
                                                 and func.value.id == "click"):
                named = call.args[0].value if call and call.args and isinstance(
                    call.args[0], ast.Constant) else None
                commands.add(named if isinstance(named, str) else node.name.replace("_", "-"))
            elif func.attr == "option" and call is not None:
                options.update(a.value for a in call.args if isinstance(a, ast.Constant)
                               and isinstance(a.value, str) and a.value.startswith("-"))
    if not group and not options:
        return None
    return Interface(actions=frozenset(commands) if group and commands else None,
                     options=frozenset(options) if options else None, abbreviations=False,
                     source="click")


def _argv_names(tree: ast.Module) -> set[str]:
    """Names bound to ``sys.argv[1]``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_argv1(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _is_argv1(node: ast.AST) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
            and node.slice.value == 1 and isinstance(node.value, ast.Attribute)
            and node.value.attr == "argv" and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "sys")


def _exits(body: list[ast.stmt]) -> bool:
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Raise):
                return True
            if isinstance(n, ast.Call) and (
                    (isinstance(n.func, ast.Attribute) and n.func.attr == "exit")
                    or (isinstance(n.func, ast.Name) and n.func.id in ("exit", "quit"))):
                return True
    return False


def _sys_argv(tree: ast.Module) -> Interface | None:
    names = _argv_names(tree)

    def is_action(n: ast.AST) -> bool:
        return _is_argv1(n) or (isinstance(n, ast.Name) and n.id in names)

    table = _dispatched(tree, is_action)
    if table is not None:
        return Interface(actions=table, source="sys.argv")
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        actions: set[str] = set()
        cur: ast.If | None = node
        while cur is not None:
            t = cur.test
            if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and is_action(t.left)):
                break
            if isinstance(t.ops[0], ast.Eq) and isinstance(t.comparators[0], ast.Constant) \
                    and isinstance(t.comparators[0].value, str):
                actions.add(t.comparators[0].value)
            elif isinstance(t.ops[0], ast.In) and _strs(t.comparators[0]) is not None:
                actions.update(_strs(t.comparators[0]) or [])
            else:
                break
            if len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If):
                cur = cur.orelse[0]
                continue
            if cur.orelse and _exits(cur.orelse) and len(actions) >= 1:
                return Interface(actions=frozenset(actions), source="sys.argv")
            break
    return None


# [^\S\n]: the blanks of one line (``\s*`` after ``^`` ran over every following blank line)
_CASE = re.compile(r"^[^\S\n]*case\s+\"?\$\{?(?P<var>1|[A-Za-z_]\w*)(?::-[^}]*)?\}?\"?\s+in\s*$",
                   re.M)
_LABEL = re.compile(r"^\s*\(?\s*(?P<pats>[^()\n]+?)\s*\)")


def _shell(source: str) -> Interface | None:
    from1 = {m.group(1) for m in re.finditer(
        r"^[^\S\n]*(?:local\s+)?([A-Za-z_]\w*)=\"?\$\{?1(?::-[^}]*)?\}?\"?\s*$", source, re.M)}
    for m in _CASE.finditer(source):
        if m["var"] != "1" and m["var"] not in from1:
            continue
        end = source.find("esac", m.end())
        if end < 0:
            return None
        labels: set[str] = set()
        depth = 0
        for line in source[m.end():end].splitlines():
            if re.match(r"^\s*case\s", line):
                depth += 1
            if depth == 0:
                lm = _LABEL.match(line)
                if lm and not lm["pats"].lstrip().startswith(("#", "echo", "if")):
                    for pat in lm["pats"].split("|"):
                        labels.add(pat.strip().strip("'\""))
            if "esac" in line:
                depth = max(0, depth - 1)
        if any(c in p for p in labels - {"*"} for c in "*?["):
            return None  # a glob label accepts more than its words
        words = {p for p in labels if p and p != "*" and not p.startswith("-")}
        if not words:
            continue  # an option loop (`--out) ...`): the actions, if any, come later
        return Interface(actions=frozenset(words), source="case")
    return None


def read_interface(source: str, suffix: str) -> Interface | None:
    """The interface of a script (``suffix``: its file extension, '' for none), or None when
    it cannot be told with certainty."""
    if len(source) > MAX_SOURCE:
        return None
    if suffix == ".py" or (source.startswith("#!") and "python" in source.split("\n", 1)[0]):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        ap = _argparse(tree)
        if ap.found:
            actions = None
            if ap.subcommands and "\0dynamic" not in ap.subcommands:
                actions = frozenset(ap.subcommands)
            elif ap.choices is not None:
                actions = frozenset(ap.choices)
            elif ap.first_dest is not None:  # `ACTIONS[args.action](args)`
                dest = ap.first_dest
                actions = _dispatched(tree, lambda n: isinstance(n, ast.Attribute)
                                      and n.attr == dest)
            return Interface(actions=actions,
                             options=frozenset(ap.options) if ap.complete else None,
                             abbreviations=ap.abbrev, source="argparse")
        return _click(tree) or _sys_argv(tree)
    if suffix in (".sh", ".bash", "") and (suffix or source.startswith("#!")):
        return _shell(source)
    return None
