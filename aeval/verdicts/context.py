"""A skill's script refusing the reader's **context**, not its arguments (`context_refusal`).

A release script run in an empty folder says "error: not inside a git repository"; a bundle
script says "No package.json found"; a GitHub script says "GITHUB_TOKEN is not set"; a fetch
script says "Could not resolve host". Each exited with its own message because the folder is
not the reader's repository or project, or lacks the reader's credentials or network: the
doc test could not supply what the reader has, so the case is ``untested: needs <context>``
with the script's own words quoted, never a ``fail``.

What still fails, whatever the message says (the callers rule these out first, or this
module declines): the script is missing or cannot start; its parser refused a documented
flag or subcommand (an argparse error, a "usage:" it printed, a documented word it named as
unknown); a syntax or import error, an uncaught exception of the skill's own code that names
no context (an ImportError or AttributeError is the code's, whatever its words); and a
missing path that the skill ships or should ship (``templates/notes.md not found``: a file
of the skill, not of the reader).

Pure: the output is untrusted text, read line by line with bounded regular expressions; the
quote is bounded and its control characters escaped.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from aeval.isolation.text import one_line
from aeval.verdicts.doctest import Diagnosis, own_file

QUOTE_CAP = 200
_LAST_LINES = 5  # the refusal is among the last lines the script printed
_LINE_CAP = 1000

_REPO = r"(?:repo(?:sitory)?|work(?:ing)?[ -]?tree|checkout)"
# the folder is not the reader's git repository, or lacks its history
_GIT = re.compile(
    rf"\bgit\b[^\n]{{0,60}}\b{_REPO}\b|\b{_REPO}\b[^\n]{{0,40}}\bgit\b|"
    rf"\b(?:not|outside(?: of)?) (?:a |in |inside |within |in a |inside a |the )?"
    rf"(?:git |valid |\(?git\)? )?{_REPO}\b|"
    r"\bno (?:git )?repo(?:sitory)? (?:found|detected)\b|\.git\b[^\n]{0,20}\b(?:not found|"
    r"missing)\b", re.I)
_DIRTY = re.compile(r"\b(?:uncommitted|unstaged|untracked) (?:changes|files)\b|"
                    r"\bworking (?:tree|directory|copy) (?:is )?(?:not clean|dirty)\b", re.I)
# a repository, but not the reader's: no tags, no upstream, no remote, no earlier commits
# (the doc test's checkout has one commit and nothing else)
_HISTORY = re.compile(
    r"\bno names found, cannot describe\b|\bno (?:release |version |git )?tags?\b|"
    r"\bunknown revision\b|\bdoes not have any commits\b|"
    r"\bno upstream (?:branch|configured)\b|\bno such remote\b|"
    r"\b(?:remote|origin) [^\n]{0,30}\bnot (?:found|configured|set)\b|"
    r"\bcouldn't find remote ref\b", re.I)
# a credential by its variable's name: GITHUB_TOKEN, OPENAI_API_KEY, NPM_AUTH_TOKEN
# (not any *_KEY: PRIMARY_KEY, SORT_KEY are the code's own names)
_CRED_VAR = re.compile(r"\b[A-Z][A-Z0-9]*_(?:[A-Z0-9]+_)*(?:TOKEN|API_KEY|ACCESS_KEY|SECRET_KEY|"
                       r"PRIVATE_KEY|SECRET|PASSWORD|PASSWD|PAT|CREDENTIALS?)\b")
_CREDENTIAL = re.compile(
    r"\bnot (?:logged|signed|authenticated) in\b|\b(?:log|sign) ?in (?:first|required)\b|"
    r"\bplease (?:log|sign) ?in\b|\bauth(?:entication|orization)? (?:required|failed)\b|"
    r"\bunauthori[sz]ed\b|\bbad credentials\b|\bnot authenticated\b|"
    r"\bno (?:valid )?(?:credentials?|api[ _-]?key|(?:access |auth |api )?token|login)\b|"
    r"\b(?:credentials?|api[ _-]?key|(?:access |auth |api )?token)s? (?:is |are )?(?:not "
    r"(?:set|found|configured|provided)|missing|required|expired)\b|\blogin required\b|"
    r"\bmissing (?:credentials?|api[ _-]?key|(?:access |auth |api )?token)\b", re.I)
_NETWORK = re.compile(
    r"\bcould not resolve\b|\bname or service not known\b|\bname resolution\b|"
    r"\bconnection (?:refused|reset|timed out|error|failed)\b|\bnetwork (?:is )?unreachable\b|"
    r"\bfailed to (?:connect|establish a (?:new )?connection)\b|"
    r"\bno (?:internet|network)(?: connection| access)?\b|"
    r"\b(?:cannot|can't|could not|couldn't|unable to) (?:connect|reach)\b|\bgetaddrinfo\b|"
    r"\bENOTFOUND\b|\bECONNREFUSED\b|\bhost unreachable\b|\bare you offline\b", re.I)
# the reader's project or file: "No package.json found", "data/sales.csv does not exist"
# (a tool's own "No such file or directory" inside the script is not the script's refusal)
_READER = re.compile(
    r"\bno (?!such\b)[^\n]{0,60}?\bfound\b|\b(?:cannot|can't|could not|couldn't|unable to) "
    r"(?:find|locate)\b|\bnot found\b|\b(?:does not|doesn't) exist\b|"
    r"\bmust be run (?:from|in|inside)\b|"
    # "no package.json in /work/site": the reader's project file, where the block ran
    r"\bno [\w.-]+\.(?:json|toml|ya?ml|lock|txt|cfg|ini|conf|mod|gradle|xml)\b "
    r"(?:in|at|under|here)\b|"
    r"\bfrom the root of (?:your|the|a) [^\n]{0,40}?\b(?:project|repo(?:sitory)?|site|"
    r"workspace|app|checkout)\b|"
    r"\brun (?:this|it|the script|me)?\b[^\n]{0,40}\b(?:from|in|inside) (?:the |your |a )?"
    r"(?:project|repo(?:sitory)?|workspace|app)\b", re.I)
# "missing" counts only with the path it misses: "error: missing CHANGELOG.md"
_MISSING = re.compile(r"\bmissing\b|\bis required\b", re.I)
# a line about the script's arguments, not the reader's files: "missing required argument"
_ARGUMENTS = re.compile(r"\b(?:argument|option|flag|parameter|subcommand|positional)s?\b",
                        re.I)
_NO_FILE = re.compile(r"\bno ([\w.-]+\.[A-Za-z]{1,10})\b")
_PATH_WORD = re.compile(r"[\w~.$/{}-]*[./][\w.$/{}-]+")
_LOGIN_FILE = re.compile(r"cred|token|auth|login|netrc|session|\.pem$|secret", re.I)
_USAGE = re.compile(r"^\s*usage:", re.I | re.M)
# exceptions that are the code's own fault, whatever their message says
_CODE_FAULTS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "NameError",
                          "TypeError", "SyntaxError", "IndentationError", "TabError",
                          "UnboundLocalError", "AssertionError", "ZeroDivisionError",
                          "RecursionError", "NotImplementedError"})


def quote(line: str) -> str:
    """A line of the script's output as it is quoted in a reason: bounded, inert."""
    line = line.strip()
    return one_line(line[:QUOTE_CAP] + ("…" if len(line) > QUOTE_CAP else ""))


def _paths(line: str) -> list[str]:
    return [w.strip(".,:;'\"`()") for w in _PATH_WORD.findall(line[:_LINE_CAP])
            if w.strip(".,:;'\"`()") not in ("", ".", "..")]


def _skills(path: str, skill_dir: Path) -> bool:
    """Whether a path a script printed is a file of the skill (shipped, or in one of its
    folders): relative to it, through its name, or absolute inside the copy."""
    if path.startswith("~"):
        return False
    if path.startswith("/"):  # the copy's own path, or /mnt/skills/user/<name>/x
        try:
            if Path(path) in (skill_dir, skill_dir.resolve()):
                return False  # the folder the block ran in (the reader's project, there)
            if Path(path).is_relative_to(skill_dir) or \
                    Path(path).is_relative_to(skill_dir.resolve()):
                return True
        except (OSError, RuntimeError, ValueError):
            return False
        return own_file(path, skill_dir, (skill_dir.name,)) is not None
    # `scripts/../templates/x.tsx` (a script's dirname "$0"/..) is the skill's templates/x.tsx
    rel = posixpath.normpath(path) if "$" not in path and "{" not in path else path
    return own_file(rel, skill_dir, (skill_dir.name,)) is not None


def needed(line: str, skill_dir: Path) -> str | None:
    """The context one line of a refusal names ("a git repository", "GITHUB_TOKEN", "the
    network", "the reader's package.json"), or None: the line names none, or the path it
    misses is the skill's own (``templates/base.html not found``: shipped or should be)."""
    ln = line[:_LINE_CAP]
    paths = _paths(ln)
    if any(_skills(p, skill_dir) for p in paths):
        return None  # the skill's own file: its defect, whatever else the line says
    var = _CRED_VAR.search(ln)
    if var is not None and (_CREDENTIAL.search(ln) or re.search(
            r"\b(?:not set|unset|is required|required|missing|empty|environment variable)\b",
            ln, re.I)):
        return var.group(0)
    if _DIRTY.search(ln):  # an earlier block's output in the checkout
        return "a clean git working tree"
    if _HISTORY.search(ln):
        return "the reader's git history"
    if _GIT.search(ln):
        return "a git repository"
    if _CREDENTIAL.search(ln):
        return "a login or credential"
    if _NETWORK.search(ln):
        return "the network"
    if (_READER.search(ln) or (paths and _MISSING.search(ln))) and not _ARGUMENTS.search(ln):
        login = next((p for p in paths if _LOGIN_FILE.search(p)), None)
        if login is not None:
            return f"a login ({login})"
        if (named := _NO_FILE.search(ln)) is not None:  # "no package.json in ...": that file
            return f"the reader's {named.group(1)}"
        return f"the reader's {paths[0]}" if paths else "the reader's project"
    return None


def context_refusal(rel: str, output: str, skill_dir: Path) -> Diagnosis | None:
    """``needs <context>`` when the skill's script ``rel`` exited with its own refusal of the
    reader's context among its last lines (the caller has ruled out a missing or unstartable
    file, a traceback in the skill's code, a parser's rejection of documented words and a
    missing module or tool). None when the script printed its usage (it is talking about its
    arguments) or no line names a context."""
    if _USAGE.search(output[-20_000:]):
        return None
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()][-_LAST_LINES:]
    for ln in lines:
        context = needed(ln, skill_dir)
        if context is not None:
            return Diagnosis("needs_context", f"needs {context}: the skill's {rel} refuses to "
                                              f"run without it, saying \"{quote(ln)}\"",
                             f"{context} ({rel} says \"{quote(ln)}\")")
    return None


def exception_context(exc_line: str, output: str, skill_dir: Path, file: str
                      ) -> Diagnosis | None:
    """``needs <context>`` for an uncaught exception in the skill's code whose message is the
    reader's context (``KeyError: 'GITHUB_TOKEN'``, ``URLError: <urlopen error [Errno -3]
    Temporary failure in name resolution>``, a ``CalledProcessError`` of git with git's own
    ``fatal: not a git repository`` above it); None for an exception that is the code's own
    fault (`_CODE_FAULTS`) or names no context."""
    kind = exc_line.split(":")[0].split(".")[-1].strip()
    if kind in _CODE_FAULTS:
        return None
    said = exc_line
    if kind == "KeyError":  # os.environ["GITHUB_TOKEN"]: only a credential's name counts
        var = _CRED_VAR.search(exc_line)
        if var is None:
            return None
        context = var.group(0)
    else:
        context = needed(exc_line, skill_dir)
        if context is None and kind == "CalledProcessError":
            fatal = [ln for ln in output.splitlines() if ln.startswith(("fatal:", "error:"))]
            for ln in fatal[-3:]:
                context = needed(ln, skill_dir)
                if context is not None:
                    said = ln
                    break
        if context is None or context.startswith("the reader's"):
            return None  # a missing input is the general rules' (OSError) to read
    return Diagnosis("needs_context", f"needs {context}: {quote(said)} raised in the skill's "
                                      f"{file}", f"{context} ({file} says \"{quote(said)}\")")
