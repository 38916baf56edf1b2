"""The doc-test tier: what a SKILL.md shell block that ran proves, and the case it makes.

Real SKILL.md files are partly illustrative: blocks with placeholders (``<file>``,
``{name}``, ``YOUR_API_KEY``, a bare ``...``), console sessions, examples of what not to do,
installs of host software, commands that need a tool the reader installs. A gate is only
useful if `fail` means "this skill is broken", so a doc test fails only on a block that ran
and broke in the skill's *own* code or interface:

- the block ran a file of the skill that is missing, not executable, or whose interpreter
  line is unusable;
- the skill's own file, run with the documented arguments, exited non-zero while the
  environment was complete (no missing module or host tool, every input it names present,
  no sign of a missing network or credential), whatever the wording of its rejection;
- a Python traceback raised in a file of the skill; an argparse rejection ("invalid choice",
  "unrecognized arguments") by a script of the skill.

A missing host command or module ("command not found", "No module named X") leaves the case
`untested: needs X` unless the contract declares X. A skill script's own refusal of the
reader's context (not the reader's git repository, no package.json, no token, no network)
leaves it `untested: needs <context>`, quoting the script (`aeval.verdicts.context`).
Anything else is inconclusive.

**Taint by dependency, not by order.** A failure is discounted (``not_evidence``) only when
the block needs what a block that did not run cleanly (skipped, inconclusive, needing a tool,
timed out) would have produced: a file it reads that such a block creates or names, a
variable that block sets, or the folder a block ``cd``'d into (blocks run one by one from the
skill folder, while a reader's shell would have stayed where any earlier block went). A block
whose own skill file is missing, not executable or rejects its documented arguments fails
whatever came before, unless an earlier block would have made that very file.

Which blocks run is `aeval.skill.shell_blocks` (`plan_blocks`). This module names the
skill's own files (`own_file`), holds what a failed block says (`Diagnosis`) and folds the
outcomes (`depends`, `discounted`, `summarize`); reading a failed block's output is
`aeval.verdicts.diagnosis`.

Pure: no processes here. ``adapters/runtimes/literal.py`` runs the blocks and folds the outcomes
with `summarize`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aeval.skill.shell_blocks import SCRIPT_EXT, SKILL_FOLDERS, BlockPlan, DocBlock
from aeval.skill.shellparse import Effects, commands, norm, related, skill_root_rest

# ---- the skill's own files ------------------------------------------------------------------


def one_edit(x: str, s: str) -> bool:
    """Whether ``x`` is ``s`` with one letter added, dropped, changed, or two neighbours
    swapped, its first letter kept and no version number merely appended."""
    if x == s or len(s) < 4 or x[0] != s[0] or abs(len(x) - len(s)) > 1:
        return False
    if x.startswith(s) and x[len(s):].isdigit():
        return False  # pathlib2, pickle5: a versioned package of its own
    if len(x) == len(s):
        diff = [i for i in range(len(x)) if x[i] != s[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and x[diff[0]] == s[diff[1]] and x[diff[1]] == s[diff[0]])
    short, long_ = (x, s) if len(x) < len(s) else (s, x)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


# programs an interpreter line names (a version suffix aside: python3.12, ruby3)
INTERPRETERS = frozenset({
    "python", "python2", "python3", "pypy", "pypy3", "bash", "sh", "zsh", "dash", "ksh", "fish",
    "node", "nodejs", "deno", "bun", "ts-node", "tsx", "ruby", "perl", "php", "Rscript", "lua",
    "pwsh", "tclsh", "osascript", "awk", "gawk", "uv", "julia", "groovy", "swift", "elixir",
    "tcsh", "csh", "mksh", "ash", "busybox", "jruby", "rdmd", "nim", "runghc", "scala", "kotlin",
    "guile", "racket", "sbcl", "clojure", "bb", "jq", "make", "expect", "wish"})


def interpreter_problem(path: Path) -> str | None:
    """Why a file run directly cannot start, read from its first line (None: usable): no
    interpreter line on a non-shell script, CRLF, a relative program, or a program one edit
    from a known interpreter (``#!/usr/bin/env pyhton3``: a typo, not a tool to install)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    first = head.split(b"\n", 1)[0]
    if not first.startswith(b"#!"):
        return None if path.suffix in (".sh", ".bash", "") else "it has no interpreter line (#!)"
    if first.endswith(b"\r"):
        return "its interpreter line ends with a carriage return (CRLF line endings)"
    words = first[2:].decode(errors="replace").split()
    if not words or not words[0].startswith("/"):
        return f"its interpreter line names a relative program {(words or [''])[0]!r}"
    program = PurePosixPath(words[0]).name
    if program == "env":  # env [-S] [VAR=x] program
        program = next((w for w in words[1:] if not w.startswith("-") and "=" not in w), "")
    # a version or ABI suffix is the same interpreter: python3.12, python3m, pythonw, rubyw
    bare = re.sub(r"(?:[\d.]*[mdw]|[\d.]+)$", "", program)
    if program and program not in INTERPRETERS and bare not in INTERPRETERS:
        # a typo changes, swaps or drops a letter (pyhton3, pyton3); a name one letter longer
        # than an interpreter is more often another program (perls, bashx) than a typo
        near = next((k for k in sorted(INTERPRETERS) if len(program) <= len(k)
                     and one_edit(program, k)), None) or \
            next((k for k in sorted(INTERPRETERS) if len(bare) <= len(k) and one_edit(bare, k)),
                 None)
        if near is not None:
            return (f"its interpreter line names {program!r}, which is no interpreter "
                    f"(a misspelling of {near}?)")
    return None


def own_file(word: str, skill_dir: Path, names: tuple[str, ...] = ()) -> str | None:
    """The skill-relative path a command word names as a file of the skill itself, whether or
    not it exists: ``$SKILL_DIR/x`` (or any spelling of the skill folder, see
    `aeval.skill.shellparse.as_skill_var`: ``{baseDir}/x``, ``/mnt/skills/user/<name>/x``);
    a path through a folder named after the skill
    (``.claude/skills/<name>/x``, ``~/skills/<name>/x``); a relative path that exists in the
    skill, or starts in one of its folders or in `SKILL_FOLDERS` (``scripts/x.py``); a bare
    ``x.py`` when the skill keeps other such files at its root. None for a word that names no
    file of the skill (a program on PATH, ``./node_modules/.bin/x``, ``dist/index.js`` or
    ``bin/rails`` of the reader's project, an absolute path elsewhere, a path above it)."""
    w = word.strip()
    if not w or "://" in w or w.startswith("-"):
        return None
    rest = skill_root_rest(w, names)
    direct = bool(rest)
    w = rest if rest else w
    if "$" in w or any(c in w for c in "*?[]{}<>`"):
        return None
    parts = PurePosixPath(w).parts
    for name in names:  # `.claude/skills/pdf/scripts/x.py`, `/mnt/skills/pdf/scripts/x.py`
        if name in parts[:-1]:
            rest = parts[len(parts) - 1 - parts[::-1].index(name) + 1:]
            if rest:
                return "/".join(rest)
    if w.startswith(("/", "~")):
        return None
    rel = norm(w)
    if rel == "." or ".." in PurePosixPath(rel).parts:
        return None
    suffix = PurePosixPath(rel).suffix
    if direct or os.path.lexists(skill_dir / rel):
        return rel
    if "/" in rel:  # in one of the skill's folders, or in one a skill keeps scripts in
        first = rel.split("/", 1)[0]
        return rel if first in _top(skill_dir) or first in SKILL_FOLDERS else None
    if suffix in SCRIPT_EXT and any(PurePosixPath(n).suffix == suffix
                                    for n in _top(skill_dir, files=True)):
        return rel
    return None


def _top(skill_dir: Path, files: bool = False) -> set[str]:
    """The names of the skill folder's entries: its folders, or its files."""
    try:
        with os.scandir(skill_dir) as it:
            return {e.name for e in it if (e.is_file(follow_symlinks=False) if files
                                           else e.is_dir(follow_symlinks=False))}
    except OSError:
        return set()





# ---- what a failed block says ---------------------------------------------------------------

# needs_context: the skill's script refused the reader's context (a git repository, the
# reader's files, a credential, the network; `aeval.verdicts.context`): ``tool`` names it
# result: the skill's script exited with a status SKILL.md gives as its answer (a finding)
Kind = Literal["missing_tool", "needs_context", "defect", "inconclusive", "result"]
Own = Literal["file", "rejected", "usage", "crash"]


@dataclass(frozen=True)
class Diagnosis:
    """What a failed block says about the skill. ``file``: the skill file a defect is about
    (an own-file defect fails whatever came before, unless an earlier block made that file)."""

    kind: Kind
    reason: str
    tool: str | None = None
    file: str | None = None
    # an own-file defect: "file" the skill file is missing or cannot start (or parse, or
    # imports a module that exists nowhere); "rejected" it ran with the documented arguments
    # and said no; "usage" its argparse rejected documented words that hold no variable;
    # "crash" a traceback raised in the skill's code
    own: Own | None = None
    at: int | None = None  # the failing command's line in the block (0-based), when known
    # the path the block expected and did not find (an input missing), when its error names it
    input: str | None = None


# ---- dependency between blocks --------------------------------------------------------------

def depends(needs: Effects, earlier: Effects, skill_files: frozenset[str] = frozenset(),
            own: Own | None = None, file: str | None = None, said: str = ""
            ) -> str | None:
    """Why a block with ``needs`` may depend on an ``earlier`` block (None: it does not).

    ``own``/``file``: an own-file defect and its skill file. A block whose skill file is
    missing or cannot start (``file``) fails whatever came before, unless the earlier block
    would have made that very file; so does one whose argparse rejected documented words
    that hold no variable (``usage``: what argparse read, SKILL.md wrote). A crash in the
    skill's code (``crash``) fails whatever came before unless the earlier block set a
    variable the block uses, exported one the crash names (``said``: its message, e.g.
    ``KeyError: 'API_URL'``) or would have made a path the block names: a ``cd`` or an
    unrelated export cannot make the skill's code raise. One whose file rejected its
    documented arguments otherwise (``rejected``) depends also when the earlier block set
    a variable it uses, exported one or would have made a path its arguments name.
    Any other failure depends on an earlier block that would have made a path it names,
    set a variable it uses or exported one, or left the reader's shell in another folder.
    ``skill_files``: the skill's files before any block ran (an earlier block that merely
    reads one did not produce it)."""
    made = earlier.writes | {n for n in earlier.names if n not in skill_files}
    if file is not None:
        hit = next((m for m in sorted(made) if related(norm(file), m)), None)
        if hit is not None:
            return f"it would have made {hit}"
        if own in ("file", "usage"):
            return None
    shared = sorted(needs.uses & earlier.sets)
    if shared:
        return f"it sets ${shared[0]}"
    if own == "crash":
        named = sorted(v for v in earlier.exports | earlier.sets
                       if re.search(rf"(?<!\w){re.escape(v)}(?!\w)", said))
        if named:  # the crash names the variable (`KeyError: 'REPORT_DIR'`)
            verb = "exports" if named[0] in earlier.exports else "sets"
            return f"it {verb} ${named[0]}"
        return _made(needs, made)
    if earlier.exports:
        return f"it exports ${sorted(earlier.exports)[0]}"
    if own == "rejected":  # `digest.py pr.json` after `gh pr view ... > pr.json` failed:
        return _made(needs, made)  # it read what the failed block left (an empty file)
    if own is not None:
        return None
    if earlier.cd is not None:
        return f"the reader's shell would be in {earlier.cd} after it"
    return _made(needs, made)


def _made(needs: Effects, made: set[str]) -> str | None:
    for n in sorted(needs.names | needs.runs):
        hit = next((m for m in sorted(made) if related(n, m)), None)
        if hit is not None:
            return f"it would have made {hit}"
    return None


# ---- folding the outcomes -------------------------------------------------------------------

Outcome = Literal["ok", "skipped", "missing_tool", "needs_context", "defect", "inconclusive",
                  "timeout", "not_evidence"]


@dataclass
class BlockOutcome:
    """What happened to one block."""

    line: int
    outcome: Outcome
    reason: str = ""
    tool: str | None = None
    evidence: str = ""


@dataclass
class DocTestSummary:
    """What the doc test's blocks add up to, and the text that explains it: `completed`
    (some block ran, none broke in the skill's code), `failed` (a skill defect), `untested`
    (nothing self-contained, or a tool it needs is missing), `timeout` (the case's deadline
    stopped it). `doc_test_verdict` makes it the case's status."""

    status: Literal["completed", "failed", "untested", "timeout"]
    final_text: str
    outcomes: list[BlockOutcome] = field(default_factory=list)


# what a step says of itself, in the third person or the passive ("it is written to `x`",
# "saves the issues to `x`"); an imperative ("Create `config.json`") asks the reader
_WRITTEN = re.compile(r"\b(?:writes|written|saves|saved|creates|created|produces|produced|"
                      r"generates|generated|exports|exported|outputs)\b[^`\n]{0,40}"
                      r"`([^`\n]{1,300})`", re.I)
_READER = re.compile(r"\byou(?:r|rs|rself)?\b", re.I)
# a clean exit that says the step did nothing (a credential not set, a dry run)
_DID_NOTHING = re.compile(r"\b(?:not set|nothing (?:to|was|fetched|written|done)|skipp(?:ed|"
                          r"ing)|dry[- ]run|no (?:token|credentials?|api key))\b", re.I)


def did_nothing(output: str) -> bool:
    """Whether a block that exited 0 says it did nothing (``GITHUB_TOKEN is not set; nothing
    fetched``): what it promised to write is then no promise kept or broken."""
    return bool(_DID_NOTHING.search(output[-4000:]))


def promised(path: str, earlier: list[DocBlock]) -> str | None:
    """The prose before an earlier block that says that block writes ``path`` (``it is
    written to `plate_layout.json` ``), or None. When every earlier block ran cleanly, a
    later block that does not find that file found a skill that breaks its own word: the
    default output moved, a step stopped writing it. A sentence addressed to the reader
    (``you``, ``your``, an imperative) is the reader's to do, no promise of the skill."""
    want = os.path.normpath(path)
    for b in earlier:
        text = b.before[-2000:]
        for m in _WRITTEN.finditer(text):
            sentence = re.split(r"[.!?:;]\s", text[max(0, m.start() - 120):m.start()])[-1]
            if _READER.search(sentence) or _READER.search(m.group(0)):
                continue
            if os.path.normpath(m.group(1).strip().strip("'\"")) == want:
                return m.group(0)
    return None


def taints(plan: BlockPlan, outcome: BlockOutcome) -> bool:
    """Whether a later block that depends on this one stops being evidence: it did not run
    cleanly (skipped, when its skip takes something away; or failed in any way: a defect, a
    missing tool, inconclusive, a timeout, not evidence itself), or it ran and moved the
    reader's shell (``cd``)."""
    if outcome.outcome == "skipped":
        return plan.taints or plan.effects.cd is not None
    return outcome.outcome != "ok" or plan.effects.cd is not None


def discounted(plan: BlockPlan, d: Diagnosis,
               unclean: list[tuple[BlockPlan, BlockOutcome]], shipped: frozenset[str]
               ) -> str | None:
    """Why a block that failed with ``d`` is not evidence: it needs what an earlier block
    that taints (``unclean``, in order) would have left (None: the failure is evidence). A
    clean block's ``cd`` does not move the skill's own files."""
    for earlier, outcome in unclean:
        if outcome.outcome == "ok" and d.own is not None:
            continue
        why = depends(plan.effects, earlier.effects, shipped, d.own, d.file if d.own else None,
                      d.reason)
        if why is not None:
            return f"may depend on line {earlier.line} ({outcome.outcome}: {why})"
    return None


def not_run(code: str, at: int | None, first_line: int = 0) -> str | None:
    """What a block that stopped at its line ``at`` (0-based; bash -e ends a block at its
    first failing command) never ran: "SKILL.md lines N-M (the rest of the block) were not
    run" (``first_line``: the SKILL.md line of the block's first line; 0: unknown, the lines
    are the block's own). None when nothing came after, or the failing line is unknown. A
    defect later in the block was not tested, and the reader should know."""
    if at is None:
        return None
    later = [c.line for c in commands(code) if c.line > at]
    if not later:
        return None
    lines = code.splitlines()
    end = max(i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#"))
    start = min(later)
    if first_line:
        where, a, b = "SKILL.md line", first_line + start, first_line + end
    else:
        where, a, b = "line", start + 1, end + 1
    span = f"{where}s {a}-{b}" if b > a else f"{where} {a}"
    verb = "were" if b > a else "was"
    return f"{span} (the rest of the block) {verb} not run"


class DocTestReport(BaseModel):
    """What a doc test's blocks did, as the runtime that ran them reports it. The runtime
    decides no verdict: the judge reads this report (`summary`, then `doc_test_verdict`)."""

    model_config = ConfigDict(extra="forbid")

    blocks: list[BlockOutcome] = Field(
        default_factory=list, description="What happened to each block, in order, up to the "
                                          "last one reached.")
    planned: int = Field(0, description="How many blocks there were to run.")
    timed_out: bool = Field(False, description="The case's deadline stopped the doc test.")
    nothing: str | None = Field(None, description="Why there was nothing to run at all "
                                                  "(SKILL.md has no shell block).")

    def summary(self) -> DocTestSummary:
        if self.nothing is not None:
            return DocTestSummary("untested", self.nothing, self.blocks)
        if self.timed_out:
            return DocTestSummary("timeout", f"timeout after {len(self.blocks)} of "
                                             f"{self.planned} block(s)", self.blocks)
        return summarize(self.blocks)


def summarize(outcomes: list[BlockOutcome]) -> DocTestSummary:
    """defect > needs X > something ran > nothing self-contained."""
    defects = [o for o in outcomes if o.outcome == "defect"]
    if defects:
        first = defects[0]
        text = "; ".join(f"SKILL.md line {d.line}: {d.reason}" for d in defects[:3])
        if len(defects) > 3:
            text += f"; and {len(defects) - 3} more"
        if first.evidence:
            text += f"\n{first.evidence}"
        return DocTestSummary("failed", text, outcomes)
    needs = list(dict.fromkeys(o.tool or ("an uninstalled command" if o.outcome ==
                                          "missing_tool" else "the reader's context")
                               for o in outcomes
                               if o.outcome in ("missing_tool", "needs_context")))
    if needs:
        return DocTestSummary("untested", "needs " + ", ".join(needs), outcomes)
    ran = [o for o in outcomes if o.outcome == "ok"]
    others = [o for o in outcomes if o.outcome != "ok"]
    notes = "; ".join(f"line {o.line}: {o.outcome} ({o.reason})" for o in others)
    if not ran:
        return DocTestSummary("untested", "no self-contained block" + (f": {notes}" if notes
                                                                        else ""), outcomes)
    text = f"{len(ran)} of {len(outcomes)} documented block(s) ran without a skill defect"
    return DocTestSummary("completed", text + (f"; {notes}" if notes else ""), outcomes)


def doc_test_verdict(run_status: str, final_text: str) -> tuple[str, str]:
    """The case status and reason of a doc-test case, from its report's `summary`.

    ``completed`` -> pass; ``failed`` (a skill defect) -> fail, the evidence as reason;
    ``untested`` -> untested (never counted as a pass); a timeout or anything else -> error
    (the environment stopped it; a retry may help). The structural assertions (the skill's
    own files modified, its static check) still turn any of these into fail.
    """
    if run_status == "completed":
        return "pass", f"doc test: {final_text}"
    if run_status == "failed":
        return "fail", f"doc test found a skill defect: {final_text}"
    if run_status == "untested":
        return "untested", final_text
    return "error", f"doc test {run_status}: {final_text}"
