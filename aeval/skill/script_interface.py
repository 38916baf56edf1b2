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

What a call must give (`Usage`, per parser: the main one and each subcommand's), read for
argparse and click only where certain: the options it requires (``required=True``; not one of
a mutually exclusive group, not a click option with ``envvar``/``prompt``/``default``), the
least number of positional words (argparse ``nargs`` absent, a number or ``+``; click
arguments without ``required=False``/``default``), the values an option accepts (a literal
``choices=`` of strings, or a module-level list/tuple/set/dict of them, with no ``type=``
conversion; click's ``type=click.Choice([...])``) and which options take one value or none.
Not read when the parser might learn more elsewhere (more than one parser, ``parents=``,
``fromfile_prefix_chars``, ``parse_known_args``, an ``add_argument`` on a parser the module
does not name).

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
    usages: dict[str | None, Usage] | None = None  # None: the main parser; else a subcommand
    choices: dict[str, frozenset[str]] = field(default_factory=dict)  # option -> its values
    choice_lines: dict[str, int] = field(default_factory=dict)  # option -> where declared

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


@dataclass(frozen=True)
class Usage:
    """What one parser (the main one, or one subcommand's) demands of a call."""

    required: tuple[tuple[tuple[str, ...], int], ...] = ()  # each required option, by all
    # its spellings, with the script's line that declares it
    positionals: int | None = None  # the least number of positional words; None: unknown
    names: tuple[tuple[str, int], ...] = ()  # the required positionals (name, line), in order
    flags: frozenset[str] = frozenset()  # options that take no value
    valued: frozenset[str] = frozenset()  # options that take exactly one value
    exits: frozenset[str] = frozenset()  # options that print and exit (--help, --version)
    subcommands: bool = False  # the parser's first positional word is a subcommand
    argc: tuple[int, int | None, int, str] | None = None  # a script that counts its words
    # (``len(sys.argv) < 3``, ``[ $# -lt 2 ]``) and exits: (least, most, line, the test)


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


_FLAG_ACTIONS = frozenset({"store_true", "store_false", "store_const", "count",
                           "append_const", "help", "version"})


def _module_strings(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level names bound to a literal collection of strings (a list, tuple or set, or
    a dict's string keys): what ``choices=FORMATS`` may name."""
    out: dict[str, list[str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        v = node.value
        values = _strs(v)
        if values is None and isinstance(v, ast.Dict) and v.keys and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in v.keys):
            values = [k.value for k in v.keys]  # type: ignore[union-attr]
        if values is not None:
            out.update((t.id, values) for t in targets if isinstance(t, ast.Name))
    return out


def _string_values(node: ast.AST, consts: dict[str, list[str]]) -> list[str] | None:
    """The strings a ``choices=`` expression is, when it is a literal or names one
    (``FORMATS``, ``list(FORMATS)``, ``sorted(FORMATS)``, ``FORMATS.keys()``)."""
    literal = _strs(node)
    if literal is not None:
        return literal
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.Call) and not node.keywords:
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("list", "sorted", "tuple", "set", "frozenset") \
                and len(node.args) == 1:
            return _string_values(node.args[0], consts)
        if isinstance(f, ast.Attribute) and f.attr == "keys" and not node.args:
            return _string_values(f.value, consts)
    return None


@dataclass
class _Need:
    """What one parser demands, as its ``add_argument`` calls are read."""

    required: list[tuple[tuple[str, ...], int]] = field(default_factory=list)
    minimum: int | None = 0
    names: list[tuple[str, int]] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    valued: set[str] = field(default_factory=set)
    exits: set[str] = field(default_factory=lambda: {"-h", "--help"})
    subcommands: bool = False

    def usage(self) -> Usage:
        return Usage(required=tuple(self.required), positionals=self.minimum,
                     names=tuple(self.names), flags=frozenset(self.flags),
                     valued=frozenset(self.valued), exits=frozenset(self.exits),
                     subcommands=self.subcommands)


def _const(node: ast.AST | None) -> object:
    return node.value if isinstance(node, ast.Constant) else ...


def _argparse_usages(tree: ast.Module) -> tuple[dict[str | None, Usage],
                                                  dict[str, frozenset[str]],
                                                  dict[str, int]] | None:
    """Per parser (None: the main one; else each subcommand's names), what a call must give,
    and the values each option with literal ``choices`` accepts; None when uncertain."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    mains = [c for c in calls if _call_name(c) == "ArgumentParser"]
    if len(mains) != 1 or any(_call_name(c) == "parse_known_args" for c in calls):
        return None
    main_kw = {k.arg: k.value for k in mains[0].keywords if k.arg}
    if "parents" in main_kw or "fromfile_prefix_chars" in main_kw or any(
            k.arg is None for k in mains[0].keywords):
        return None
    consts = _module_strings(tree)
    needs: dict[str | None, _Need] = {None: _Need()}
    if _const(main_kw.get("add_help")) is False:
        needs[None].exits = set()
    where: dict[str, tuple[str | None, bool]] = {}  # variable -> (parser, in a mutex group)
    subparsers: dict[str, str | None] = {}  # variable of add_subparsers() -> its parser
    choices: dict[str, set[str] | None] = {}
    lines: dict[str, int] = {}
    nodes = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.Call)),
                   key=lambda n: (n.lineno, n.col_offset, isinstance(n, ast.Call)))

    def receiver(node: ast.AST) -> tuple[str | None, bool] | str:
        """The parser (and mutex-ness) a method is called on; "?" when unknown."""
        if isinstance(node, ast.Name) and node.id in where:
            return where[node.id]
        if node is mains[0]:
            return (None, False)
        if isinstance(node, ast.Call) and _call_name(node) == "add_parser":
            name = register(node)
            return "?" if name is None else (name, False)
        return "?"

    def register(call: ast.Call) -> str | None:
        """The subcommand an ``add_parser`` call makes (its need made once, shared by its
        aliases); None when its name or parents are not literal."""
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if not (call.args and isinstance(_const(call.args[0]), str)) or "parents" in kw \
                or any(k.arg is None for k in call.keywords):
            return None
        first = call.args[0].value  # type: ignore[attr-defined]
        if first not in needs:
            need = _Need()
            if _const(kw.get("add_help")) is False:
                need.exits = set()
            for n in [first, *(_strs(kw["aliases"]) or [] if "aliases" in kw else [])]:
                needs.setdefault(n, need)
        return first

    def bound(value: ast.AST) -> tuple[str | None, bool] | str | None:
        """What an assignment's value makes its target (None: not a parser thing)."""
        if value is mains[0]:
            return (None, False)
        if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
            return None
        name = _call_name(value)
        if name in ("add_argument_group", "add_mutually_exclusive_group"):
            r = receiver(value.func.value)
            if r == "?":
                return "?"
            mutex = name == "add_mutually_exclusive_group" or r[1]  # type: ignore[index]
            return (r[0], mutex)  # type: ignore[index]
        if name == "add_parser":
            return receiver(value)
        return None

    for node in nodes:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                continue
            var = node.targets[0].id
            v = node.value
            if isinstance(v, ast.Call) and _call_name(v) == "add_subparsers" \
                    and isinstance(v.func, ast.Attribute):
                r = receiver(v.func.value)
                if r == "?":
                    return None
                subparsers[var] = r[0]  # type: ignore[index]
                needs[r[0]].subcommands = True  # type: ignore[index]
                continue
            b = bound(v)
            if b == "?":
                return None
            if b is not None:
                where[var] = b  # type: ignore[assignment]
            else:
                where.pop(var, None)
                subparsers.pop(var, None)
            continue
        name = _call_name(node)
        if name == "add_parser":
            if register(node) is None:
                return None
            continue
        if name != "add_argument" or not isinstance(node.func, ast.Attribute):
            continue
        r = receiver(node.func.value)
        if r == "?":
            return None
        parser, mutex = r  # type: ignore[misc]
        need = needs[parser]
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        flags = [_const(a) for a in node.args]
        if not flags or not all(isinstance(f, str) for f in flags) or any(
                k.arg is None for k in node.keywords):
            return None
        opts = [f for f in flags if f.startswith("-")]  # type: ignore[union-attr]
        action = kw.get("action")
        nargs = _const(kw.get("nargs")) if "nargs" in kw else None
        if not opts:  # a positional
            if nargs is None or nargs == "+":
                least: int | None = 1
            elif isinstance(nargs, int):
                least = nargs
            elif nargs in ("?", "*", "..."):
                least = 0
            else:
                least = None
            if need.minimum is not None:
                need.minimum = None if least is None else need.minimum + least
            if least:
                need.names.append((str(kw["metavar"].value) if isinstance(
                    kw.get("metavar"), ast.Constant) else str(flags[0]), node.lineno))
            continue
        act = _const(action) if action is not None else None
        if isinstance(action, ast.Attribute) and action.attr == "BooleanOptionalAction":
            need.flags.update(opts)
            need.flags.update("--no-" + o[2:] for o in opts if o.startswith("--"))
        elif act in _FLAG_ACTIONS:
            need.flags.update(opts)
            if act in ("help", "version"):
                need.exits.update(opts)
        elif ((act is None and action is None) or act in ("store", "append", "extend")) \
                and "nargs" not in kw:
            need.valued.update(opts)
        if _const(kw.get("required")) is True and not mutex:
            need.required.append((tuple(opts), node.lineno))  # type: ignore[arg-type]
        values = _string_values(kw["choices"], consts) if "choices" in kw else None
        plain = "type" not in kw or (isinstance(kw["type"], ast.Name) and kw["type"].id == "str")
        for o in opts:
            lines.setdefault(o, node.lineno)
            if values is None or not plain or (o in choices and choices[o] is None):
                choices[o] = None
            else:
                choices[o] = (choices.get(o) or set()) | set(values)
    if len(needs) > 1:
        needs[None].subcommands = True
    usages = {k: n.usage() for k, n in needs.items()}
    return usages, {o: frozenset(v) for o, v in choices.items() if v}, lines


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
    deep = _click_usages(tree)
    return Interface(actions=frozenset(commands) if group and commands else None,
                     options=frozenset(options) if options else None, abbreviations=False,
                     source="click", usages=deep[0] if deep else None,
                     choices=deep[1] if deep else {})


def _click_need(func: ast.FunctionDef, consts: dict[str, list[str]],
                lines: dict[str, int]) -> tuple[
        _Need, dict[str, set[str] | None]] | None:
    """What one click command (or group) function demands; None when a decorator aeval does
    not read might add to it."""
    need = _Need(exits={"--help"})
    choices: dict[str, set[str] | None] = {}
    for dec in func.decorator_list:
        call = dec if isinstance(dec, ast.Call) else None
        f = call.func if call else dec
        if not isinstance(f, ast.Attribute):
            return None  # `@common_options`: a shared decorator adds what is not read here
        kw = {k.arg: k.value for k in call.keywords if k.arg} if call else {}
        if call and any(k.arg is None for k in call.keywords):
            return None
        if f.attr in ("command", "group"):
            if "cls" in kw or "context_settings" in kw:
                return None
            continue
        if not (isinstance(f.value, ast.Name) and f.value.id == "click"):
            return None
        if f.attr in ("pass_context", "pass_obj"):
            continue
        decls = [_const(a) for a in (call.args if call else [])]
        if not all(isinstance(d, str) for d in decls):
            return None
        if f.attr in ("version_option", "help_option"):
            named = [d for d in decls if d.startswith("-")]  # type: ignore[union-attr]
            need.exits.update(named or (["--version"] if f.attr == "version_option"
                                        else ["--help"]))
            need.flags.update(named or (["--version"] if f.attr == "version_option"
                                        else ["--help"]))
            continue
        if f.attr == "argument" and call is not None:
            nargs = _const(kw.get("nargs")) if "nargs" in kw else 1
            optional = _const(kw.get("required")) is False or "default" in kw \
                or "envvar" in kw
            if not isinstance(nargs, int):
                need.minimum = None
            elif need.minimum is not None and not optional:
                least = 1 if nargs == -1 and _const(kw.get("required")) is True else max(nargs, 0)
                need.minimum += least
                if least:
                    need.names.append((str(decls[0]).upper(), dec.lineno))
            continue
        if f.attr != "option" or call is None:
            return None
        opts = [o for d in decls for o in str(d).split("/") if o.strip().startswith("-")]
        opts = [o.strip() for o in opts]
        if _const(kw.get("is_flag")) is True or _const(kw.get("count")) is True \
                or "flag_value" in kw or any("/" in str(d) for d in decls):
            need.flags.update(opts)
        elif "nargs" not in kw:
            need.valued.update(opts)
        if _const(kw.get("required")) is True and not ({"envvar", "prompt", "default"} & set(kw)):
            need.required.append((tuple(opts), dec.lineno))
        t = kw.get("type")
        values = None
        if isinstance(t, ast.Call) and _call_name(t) == "Choice" and t.args and not any(
                k.arg == "case_sensitive" for k in t.keywords):
            values = _string_values(t.args[0], consts)
        for o in opts:
            choices[o] = None if values is None else set(values)
            lines.setdefault(o, dec.lineno)
    return need, choices


def _click_usages(tree: ast.Module) -> tuple[dict[str | None, Usage],
                                              dict[str, frozenset[str]],
                                              dict[str, int]] | None:
    """Per command (None: the group, or the one command), what a call must give, for a
    script of one click group (or one command); None when uncertain."""
    if any(isinstance(n, ast.keyword) and n.arg in ("auto_envvar_prefix", "default_map")
           for n in ast.walk(tree)):
        return None
    groups, commands = [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            f = dec.func if isinstance(dec, ast.Call) else dec
            if isinstance(f, ast.Attribute) and f.attr == "group":
                groups.append(node)
            elif isinstance(f, ast.Attribute) and f.attr == "command":
                commands.append((node, dec))
    usages: dict[str | None, Usage] = {}
    choices: dict[str, set[str] | None] = {}
    lines: dict[str, int] = {}
    if len(groups) > 1 or (not groups and len(commands) != 1):
        return None
    for func, dec in [*((g, None) for g in groups), *commands]:
        read = _click_need(func, _module_strings(tree), lines)
        if read is None:
            return None
        need, ch = read
        for o, v in ch.items():
            choices[o] = None if v is None or (o in choices and choices[o] is None) \
                else (choices.get(o) or set()) | v
        if dec is None or not groups:
            need.subcommands = bool(groups)
            usages[None] = need.usage()
            continue
        call = dec if isinstance(dec, ast.Call) else None
        named = _const(call.args[0]) if call and call.args else None
        usages[named if isinstance(named, str) else func.name.replace("_", "-")] = need.usage()
    return usages, {o: frozenset(v) for o, v in choices.items() if v}, lines


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


def _is_argc(node: ast.AST) -> bool:
    """``len(sys.argv)``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "len" and len(node.args) == 1
            and isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "argv"
            and isinstance(node.args[0].value, ast.Name) and node.args[0].value.id == "sys")


def _fails(body: list[ast.stmt]) -> bool:
    """Whether a block ends the script with a failure (``sys.exit(1)``, ``sys.exit("usage")``,
    ``raise SystemExit(2)``); ``sys.exit()`` and ``sys.exit(0)`` are a success."""
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Raise):
                return True
            if isinstance(n, ast.Call) and ((isinstance(n.func, ast.Attribute)
                                             and n.func.attr == "exit")
                                            or (isinstance(n.func, ast.Name)
                                                and n.func.id in ("exit", "quit"))):
                code = n.args[0] if n.args else None
                if code is not None and not (isinstance(code, ast.Constant)
                                             and code.value in (0, None, False)):
                    return True
    return False


def _top_statements(tree: ast.Module) -> list[ast.stmt]:
    """What runs whenever the script runs: the module's statements, those of its
    ``if __name__ == "__main__":`` block and of a function called ``main``."""
    out: list[ast.stmt] = []
    for node in tree.body:
        out.append(node)
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            out.extend(node.body)
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            out.extend(node.body)
    return out


def _argv_count(tree: ast.Module) -> tuple[int, int | None, int, str] | None:
    """The words a ``sys.argv`` script needs, from an ``if len(sys.argv) < N:`` (``<=``,
    ``!=``, ``>``; alone or in an ``or``) that fails the script, at its top level."""
    least, most, line, test = 0, None, 0, ""
    for node in _top_statements(tree):
        if not isinstance(node, ast.If) or not _fails(node.body):
            continue
        tests = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(
            node.test.op, ast.Or) else [node.test]
        for t in tests:
            if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and _is_argc(t.left)
                    and isinstance(t.comparators[0], ast.Constant)
                    and isinstance(t.comparators[0].value, int)):
                continue
            n = t.comparators[0].value - 1  # argv[0] is the script
            op = type(t.ops[0])
            new_least = {ast.Lt: n, ast.LtE: n + 1, ast.NotEq: n}.get(op, 0)
            cap = {ast.NotEq: n, ast.Gt: n, ast.GtE: n - 1}.get(op)
            if not new_least and cap is None:
                continue
            if not line or new_least > least:
                line, test = node.lineno, ast.unparse(t)
            least = max(least, new_least)
            most = cap if most is None else most if cap is None else min(most, cap)
    return (least, most, line, test) if line else None


_SH_ARGC = re.compile(r"^(?:if\s+)?(?:\[\[?|test)\s+\"?\$#\"?\s+-(lt|le|ne|gt|ge|eq)\s+(\d+)\s*"
                      r"\]?\]?\s*(;\s*then|\|\||&&)?", re.M)
_NEGATED = {"lt": "ge", "le": "gt", "ne": "eq", "gt": "le", "ge": "lt", "eq": "ne"}
_SH_FAIL = re.compile(r"\bexit\s+(?:[1-9]|\"?\$)")
_SH_REQUIRED = re.compile(r"^[^\s#][^#\n]*\$\{([1-9]):\?", re.M)


def _shell_argc(source: str) -> tuple[int, int | None, int, str] | None:
    """The words a shell script needs, from an unindented ``if [ $# -lt N ]; then ... exit 1``
    (``-le``, ``-ne``; ``[ $# -ge N ] || exit 1``) or a ``${N:?message}``."""
    fails = {m.group(1) for m in re.finditer(r"^(\w+)\s*\(\)\s*\{(?:[^}]*?)\bexit\s+[1-9]",
                                            source, re.M | re.S)}
    least, most, line, test = 0, None, 0, ""
    for m in _SH_ARGC.finditer(source):
        op, n, tail = m[1], int(m[2]), m[3] or ""
        start = source.count("\n", 0, m.start()) + 1
        rest = source[m.end():]
        if tail.startswith(";") or (not tail and m.group(0).startswith("if")):
            end = rest.find("\nfi")
            body = rest[:end] if end >= 0 else ""
            exits = op  # the test is the failing case
        elif tail in ("||", "&&"):
            body = rest.split("\n", 1)[0]
            # `[ $# -ge 2 ] || exit 1` fails when the test does not hold: when $# -lt 2
            exits = op if tail == "&&" else _NEGATED[op]
        else:
            continue
        if not (_SH_FAIL.search(body) or any(re.search(rf"\b{f}\b", body) for f in fails)):
            continue
        new_least = {"lt": n, "le": n + 1, "ne": n}.get(exits, 0)
        cap = {"ne": n, "gt": n, "ge": n - 1}.get(exits)
        if not new_least and cap is None:
            continue
        if not line or new_least > least:
            line, test = start, m.group(0).strip()
        least = max(least, new_least)
        most = cap if most is None else most if cap is None else min(most, cap)
    for m in _SH_REQUIRED.finditer(source):
        n = int(m[1])
        if n > least:
            least, line, test = n, source.count("\n", 0, m.start()) + 1, f"${{{n}:?...}}"
    return (least, most, line, test) if line and least else None


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
            deep = _argparse_usages(tree) if ap.complete else None
            return Interface(actions=actions,
                             options=frozenset(ap.options) if ap.complete else None,
                             abbreviations=ap.abbrev, source="argparse",
                             usages=deep[0] if deep else None,
                             choices=deep[1] if deep else {},
                             choice_lines=deep[2] if deep else {})
        found = _click(tree) or _sys_argv(tree)
        if found is None and (argc := _argv_count(tree)) is not None:
            return Interface(usages={None: Usage(argc=argc)}, source="sys.argv")
        return found
    if suffix in (".sh", ".bash", "") and (suffix or source.startswith("#!")):
        found = _shell(source)
        if found is None and (argc := _shell_argc(source)) is not None:
            return Interface(usages={None: Usage(argc=argc)}, source="$#")
        return found
    return None
