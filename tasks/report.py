"""report.html: one self-contained page per run (no scripts, no external assets), for people
who open the run folder or the CI artifact: the gate, a table of every case, and for each
case that did not pass its failed assertions with evidence, self-corrections and fixes."""

from __future__ import annotations

from html import escape
from pathlib import Path

from aeval.artifacts import (
    Benchmark,
    FixSuggestions,
    Grading,
    RunManifest,
    TriggersReport,
    UpliftReport,
)
from aeval.store import read_model

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1f2328}
h1{font-size:1.4rem} h2{font-size:1.15rem;margin-top:2rem} table{border-collapse:collapse;
width:100%} th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa} .pass{color:#1a7f37} .fail{color:#cf222e} .error{color:#9a6700}
.invalid{color:#8250df} pre{background:#f6f8fa;padding:8px;overflow-x:auto;white-space:pre-wrap}
.gate{padding:8px 12px;border-radius:6px;background:#f6f8fa;display:inline-block}
.flag{color:#cf222e;font-weight:600}
"""


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def render_report(run_dir: Path, manifest: RunManifest) -> str:
    g = manifest.gate
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>aeval {manifest.run_id}"
           f"</title><style>{STYLE}</style></head><body>",
           f"<h1>aeval run {escape(manifest.run_id)}</h1>"]
    if g:
        out.append(f"<p class='gate'>exit {g.exit_code}: {escape(g.reason)}</p>")
    out.append(f"<p>runtimes: {escape(', '.join(manifest.runtimes))}; model: "
               f"{escape(manifest.model or '–')}; grader: {escape(manifest.grader_model or '–')}"
               + (f"; changes {escape(manifest.base[:10])}…{escape(manifest.head[:10])}"
                  if manifest.base and manifest.head else "") + "</p>")
    sb = manifest.sandbox
    if sb is not None and sb.used != "bwrap":
        out.append(f"<p class='gate'>warning: no sandbox ({escape(sb.reason or sb.requested)}): "
                   "the cases' commands ran as this user, unsandboxed</p>")
    elif sb is not None:
        out.append("<p>sandbox: bubblewrap (host read-only, the attempt's own workspace, "
                   "PID namespace)</p>")
    out.append("<table><tr><th>skill</th><th>case</th><th>runtime</th><th>status</th>"
               "<th>first-attempt</th><th>terminal</th><th>ungraded</th>"
               "<th>self-corrections</th><th>reason</th></tr>")
    details = []
    for s in manifest.skills:
        if s.status == "invalid":
            out.append(f"<tr><td>{escape(s.name)}</td><td>–</td><td>–</td><td class='invalid'>"
                       f"invalid</td><td colspan=5>{escape('; '.join(s.problems))}</td></tr>")
            continue
        for c in s.cases:
            case = c.case_id + (f" #{c.epoch}" if c.epoch is not None else "")
            link = f"<a href='{escape(c.dir)}/'>{escape(case)}</a>"
            out.append(f"<tr><td>{escape(s.name)}</td><td>{link}</td><td>{escape(c.runtime)}</td>"
                       f"<td class='{c.status}'>{c.status}</td>"
                       f"<td>{_pct(c.first_attempt_pass_rate)} ({c.passed}/"
                       f"{c.passed + c.failed})</td><td>{_pct(c.terminal_pass_rate)}</td>"
                       f"<td>{c.ungraded}</td><td>{c.self_corrections}</td>"
                       f"<td>{escape(c.reason)}</td></tr>")
            p = run_dir / c.dir / "grading.json"
            if c.status != "pass" and p.is_file():
                details.append((s.name, case, c.runtime, read_model(p, Grading)))
    out.append("</table>")
    for skill, case, runtime, gr in details:
        out.append(f"<h2>{escape(skill)} / {escape(case)} [{escape(runtime)}]: "
                   f"<span class='{gr.status}'>{gr.status}</span></h2>")
        for e in gr.expectations:
            if e.status == "failed":
                out.append(f"<p><b>{escape(e.id)}</b> {escape(e.text)}</p>"
                           f"<pre>{escape(e.evidence)}</pre>")
        for ch in gr.self_correction.changes_made:
            out.append(f"<p>self-correction <b>{escape(ch.id)}</b>: {escape(ch.change)} "
                       f"{escape(ch.path)}</p><pre>{escape(ch.diff)}</pre>")
    for s in manifest.skills:
        for rt in manifest.runtimes:
            fx = run_dir / s.name / rt / "fix_suggestions.json"
            if not fx.is_file():
                continue
            sug = read_model(fx, FixSuggestions).suggestions
            if sug:
                out.append(f"<h2>Fixes for {escape(s.name)} [{escape(rt)}]</h2>")
            for x in sug:
                out.append(f"<p><b>{x.level}</b> {escape(x.path)}:{x.start_line}-{x.end_line}"
                           f" (grounded in {escape(x.grounded_in)}): {escape(x.rationale)}</p>"
                           f"<pre>- {escape(x.original)}\n+ {escape(x.replacement)}</pre>")
    out.append(coverage_section(run_dir, manifest))
    if (run_dir / "uplift.json").is_file():
        out += uplift_section(read_model(run_dir / "uplift.json", UpliftReport))
    out.append("</body></html>")
    return "\n".join(out)


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.0%}"


def uplift_section(report: UpliftReport) -> list[str]:
    """The Uplift section (`aeval uplift`, in the with-skill run's report): per skill and
    case, pass rates with and without the skill, the paired difference with its interval,
    the exact McNemar p, tokens and wall time; a negative uplift is flagged."""
    out = [f"<h2 id='uplift'>Uplift: with the skill vs without ({escape(report.uplift_id)})</h2>",
           f"<p>Each case ran {report.epochs} time(s) with the skill installed (this run) and "
           f"as often without it (<a href='../{escape(report.without_run)}/report.html'>"
           f"{escape(report.without_run)}</a>): same prompt, case files and assertions. "
           "Uplift = pass rate with minus without, over the pairs where both runs passed or "
           "failed; 95% interval: Newcombe's hybrid score interval for paired proportions; "
           f"p: exact McNemar test (significant below {report.alpha:g}).</p>"]
    if report.gate:
        out.append(f"<p class='gate'>exit {report.gate.exit_code}: "
                   f"{escape(report.gate.reason)}</p>")
    out.append("<table><tr><th>skill</th><th>runtime</th><th>case</th><th>pairs</th>"
               "<th>pass with</th><th>pass without</th><th>uplift</th><th>95% CI</th>"
               "<th>McNemar p</th><th>tokens with / without</th><th>wall with / without (s)"
               "</th><th>verdict</th></tr>")
    for sk in report.skills:
        for case, st in [("all cases", sk.stats), *((c.case_id, c.stats) for c in sk.cases)]:
            ci = "–" if st.ci_low is None else f"{st.ci_low:+.0%} to {st.ci_high:+.0%}"
            verdict = (f"<span class='flag'>{st.verdict}: negative uplift</span>"
                       if st.flagged else escape(st.verdict))
            excluded = f" (+{st.excluded} excluded)" if st.excluded else ""
            tokens = " / ".join("–" if t is None else f"{t:.0f}" for t in (
                st.with_skill.mean_tokens, st.without_skill.mean_tokens))
            wall = " / ".join("–" if t is None else f"{t:.1f}" for t in (
                st.with_skill.mean_wall_s, st.without_skill.mean_wall_s))
            out.append(
                f"<tr><td>{escape(sk.label())}</td><td>{escape(sk.runtime)}</td>"
                f"<td>{'<b>' + escape(case) + '</b>' if case == 'all cases' else escape(case)}"
                f"</td><td>{st.pairs}{excluded}</td>"
                f"<td>{_pct(st.with_skill.pass_rate)} ({st.with_skill.passed}/{st.pairs})</td>"
                f"<td>{_pct(st.without_skill.pass_rate)} ({st.without_skill.passed}/"
                f"{st.pairs})</td><td>{_signed(st.uplift)}</td><td>{ci}</td>"
                f"<td>{'–' if st.mcnemar_p is None else f'{st.mcnemar_p:.3g}'}</td>"
                f"<td>{tokens}</td><td>{wall}</td><td>{verdict}</td></tr>")
    out.append("</table>")
    return out


# ---- skill resource coverage ------------------------------------------------------------------


def coverage_section(run_dir: Path, manifest: RunManifest) -> str:
    """Per skill x runtime: each file of the skill, how many runs read, executed or wrote it,
    and the files no case touched."""
    out = []
    for s in manifest.skills:
        for rt in manifest.runtimes:
            p = run_dir / (s.key or s.name) / rt / "benchmark.json"
            cov = read_model(p, Benchmark).coverage if p.is_file() else None
            if cov is None:
                continue
            source = "tool calls and the watch" if cov.watched else "tool calls"
            out.append(f"<h3>{escape(s.name)} [{escape(rt)}]: {len(cov.files) - len(cov.untouched)}"
                       f"/{len(cov.files)} files used over {cov.runs} run(s) ({source})</h3>"
                       "<table><tr><th>file</th><th>read</th><th>executed</th><th>written</th>"
                       "</tr>")
            for f in cov.files:
                cls = " class='fail'" if f in cov.untouched else ""
                out.append(f"<tr{cls}><td>{escape(f)}</td><td>{cov.read.get(f, 0)}</td>"
                           f"<td>{cov.executed.get(f, 0)}</td><td>{cov.written.get(f, 0)}</td>"
                           "</tr>")
            out.append("</table>")
            if cov.untouched:
                out.append("<p>untouched by every case: " + ", ".join(
                    f"<code>{escape(f)}</code>" for f in cov.untouched) + "</p>")
    if not out:
        return ""
    return "<h2>Skill resource coverage</h2><p>Which files of each skill the cases read, " \
           "executed or wrote (counts are runs); files no case touched are dead scripts or " \
           "untested references.</p>\n" + "\n".join(out)


# ---- trigger accuracy (aeval triggers) -------------------------------------------------------


def triggers_section(report: TriggersReport) -> str:
    """Precision and recall per skill x runtime, then each trial with what it loaded."""
    out = ["<h2>Trigger accuracy</h2>",
           f"<p>Each prompt ran with the skill installed among distractor skills "
           f"({escape(report.distractor_source)}); a trial stops after {report.max_turns} model "
           "turn(s). Loaded = the runtime read the skill's SKILL.md or invoked it.</p>",
           "<table><tr><th>skill</th><th>runtime</th><th>precision</th><th>recall</th>"
           "<th>tp</th><th>fn</th><th>fp</th><th>tn</th><th>errors</th><th>prompts</th>"
           "<th>picked instead</th></tr>"]
    for s in report.scores:
        picks = ", ".join(f"{k} ({v})" for k, v in s.distractor_picks.items()) or "–"
        out.append(f"<tr><td>{escape(s.skill)}</td><td>{escape(s.runtime)}</td>"
                   f"<td>{_pct(s.precision)}</td><td>{_pct(s.recall)}</td><td>{s.tp}</td>"
                   f"<td>{s.fn}</td><td>{s.fp}</td><td>{s.tn}</td><td>{s.errors}</td>"
                   f"<td>{s.source}</td><td>{escape(picks)}</td></tr>")
    out.append("</table>")
    for s in report.scores:
        out.append(f"<h3>{escape(s.skill)} [{escape(s.runtime)}]</h3><p>distractors: "
                   f"{escape(', '.join(s.distractors) or '–')}</p>"
                   "<table><tr><th>prompt</th><th>expected</th><th>outcome</th>"
                   "<th>loaded</th><th>evidence</th></tr>")
        for t in s.trials:
            ep = f" #{t.epoch}" if t.epoch is not None else ""
            expected = "load" if t.kind == "should" else "not load"
            ev = "; ".join(t.evidence) or (t.error or "")
            out.append(f"<tr><td><a href='{escape(t.dir)}/'>{escape(t.prompt[:200])}</a>{ep}"
                       f"</td><td>{expected}</td><td>{t.outcome}</td>"
                       f"<td>{escape(', '.join(t.loaded) or '–')}</td><td>{escape(ev)}</td></tr>")
        out.append("</table>")
    return "\n".join(out)


def render_triggers_report(report: TriggersReport) -> str:
    """report.html of a triggers run."""
    invalid = "".join(f"<p class='invalid'>invalid: {escape(line)}</p>"
                      for line in report.invalid)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>aeval triggers "
            f"{escape(report.run_id)}</title><style>{STYLE}</style></head><body>"
            f"<h1>aeval triggers {escape(report.run_id)}</h1><p>runtimes: "
            f"{escape(', '.join(report.runtimes))}; model: {escape(report.model or '–')}; "
            f"epochs: {report.epochs}</p>{invalid}\n{triggers_section(report)}\n</body></html>")
