"""Δ attribution: a change to the skill copy is tied to the call whose runtime record says it
wrote the file, else to the tool call during which the watch saw it, the same way for every
runtime; naming the file is no evidence (tests/unit/test_recorded_attribution.py: each
runtime's recorded stream)."""

from __future__ import annotations

from aeval.events import EVENT_ADAPTER
from aeval.isolation.workspace import FileChange
from aeval.verdicts.attribution import attribute_changes, seen_at

SKILL = ".opencode/skills/segmentation"


def call(seq: int, t: float, tool: str, **args) -> object:
    return EVENT_ADAPTER.validate_python({"seq": seq, "t": t, "kind": "tool_call",
                                          "call_id": f"c{seq}", "tool": tool, "input": args})


def result(seq: int, t: float, of: int, tool: str, **kw) -> object:
    return EVENT_ADAPTER.validate_python({"seq": seq, "t": t, "kind": "tool_result",
                                          "call_id": f"c{of}", "tool": tool, "ok": True, **kw})


RUNNER = "scripts/run.py"
EVENTS = [
    call(3, 1.0, "read_file", path=f"{SKILL}/{RUNNER}"),  # names the runner first
    result(4, 1.1, 3, "read_file"),
    call(5, 2.0, "bash", command=f"grep -n ACTIONS {SKILL}/{RUNNER}"),
    result(6, 2.4, 5, "bash"),
    call(8, 3.0, "bash", command=f"sed -i 's/\"train\"/\"segment_train\"/' {SKILL}/{RUNNER}"),
    result(9, 3.3, 8, "bash"),
    call(10, 4.0, "edit_file", path=f"{SKILL}/SKILL.md"),
    result(11, 4.2, 10, "edit_file", paths_written=[f"{SKILL}/SKILL.md"]),
]


def unrecorded(events: list) -> list:
    """The same events without any runtime's record of what a call wrote."""
    return [e.model_copy(update={"paths_written": []}) if e.kind == "tool_result" else e
            for e in events]


def change(path: str, at: float | None = None) -> FileChange:
    return FileChange(path=path, change="modified", diff="-a\n+b\n", at_s=at)


def test_a_sed_on_the_runner_is_tied_to_the_call_that_ran_it_not_the_first_that_named_it():
    (c,) = attribute_changes([change(RUNNER, 3.21)], EVENTS, SKILL)
    assert (c.event_seq, c.tool, c.attribution) == (8, "bash", "during_call")


def test_an_edit_tool_is_recorded_and_without_a_record_a_late_stamp_still_belongs_to_it():
    (c,) = attribute_changes([change("SKILL.md", 4.35)], EVENTS, SKILL)  # stamped after 4.2
    assert (c.event_seq, c.attribution) == (10, "recorded")
    (c,) = attribute_changes([change("SKILL.md", 4.35)], unrecorded(EVENTS), SKILL)
    assert (c.event_seq, c.attribution) == (10, "direct")


def test_the_first_record_naming_the_file_wins_over_any_time():
    """Two edits of SKILL.md, the watch stamped the change during a command before both:
    the first call whose record names the file, whatever the clock says."""
    events = [*EVENTS, call(12, 5.0, "edit_file", path=f"{SKILL}/SKILL.md"),
              result(13, 5.1, 12, "edit_file", paths_written=[f"./{SKILL}/SKILL.md"])]
    (c,) = attribute_changes([change("SKILL.md", 3.1)], events, SKILL)
    assert (c.event_seq, c.tool, c.attribution) == (10, "edit_file", "recorded")
    folder = FileChange(path="refs", change="added", kind="dir", diff="", at_s=3.1)
    events += [call(14, 6.0, "write_file", path=f"{SKILL}/refs/new.md"),
               result(15, 6.1, 14, "write_file", paths_written=[f"{SKILL}/refs/new.md"])]
    (d,) = attribute_changes([folder], events, SKILL)  # a file inside an added folder
    assert (d.event_seq, d.attribution) == (14, "recorded")


def test_a_builtin_commands_paths_written_is_time_evidence_not_a_record():
    """The builtin bash reports the skill entries that changed while it ran: a command that
    ran during an edit of another call is no record of it."""
    events = [call(1, 1.0, "bash", command="sleep 2"),
              call(2, 1.1, "edit_file", path=f"{SKILL}/SKILL.md"),
              result(3, 1.2, 2, "edit_file"),
              result(4, 3.0, 1, "bash", paths_written=[f"{SKILL}/SKILL.md"])]
    (c,) = attribute_changes([change("SKILL.md", 1.15)], events, SKILL)
    assert (c.event_seq, c.attribution) == (2, "direct")


def test_a_change_between_calls_is_the_process_the_latest_call_left_running():
    (c,) = attribute_changes([change(RUNNER, 3.9)], EVENTS, SKILL)
    assert (c.event_seq, c.attribution) == (8, "after_call")


def test_parallel_calls_prefer_the_write_tool_that_names_the_file():
    events = [call(1, 1.0, "edit_file", path=f"{SKILL}/SKILL.md"),
              call(2, 1.05, "bash", command="sleep 1"),
              result(3, 1.2, 1, "edit_file"), result(4, 2.1, 2, "bash")]
    (c,) = attribute_changes([change("SKILL.md", 1.1)], events, SKILL)
    assert (c.event_seq, c.attribution) == (1, "direct")


def test_without_the_watch_the_call_that_reported_the_write_then_a_named_guess():
    a, b = attribute_changes([change("SKILL.md"), change(RUNNER)], EVENTS, SKILL)
    assert (a.event_seq, a.attribution) == (10, "recorded")
    assert (b.event_seq, b.attribution) == (3, "named")  # a guess, and it says so
    (none,) = attribute_changes([change("other.md")], EVENTS, SKILL)
    assert (none.event_seq, none.attribution) == (None, "unknown")


def test_seen_at_takes_the_first_change_the_watch_saw_of_each_entry():
    touches = [("scripts/sedAb12", "created", 3.1), (RUNNER, "moved", 3.2),
               (RUNNER, "attributes", 3.25), ("refs/new.md", "created", 5.0)]
    runner, folder, unseen, put_back = seen_at(
        [change(RUNNER), FileChange(path="refs", change="added", kind="dir"),
         change("SKILL.md"), change("x.md", 1.5)], touches)
    assert runner.at_s == 3.2 and folder.at_s == 5.0 and unseen.at_s is None
    assert put_back.at_s == 1.5


def test_a_change_inside_one_window_is_never_given_to_the_next_call_starting_just_after():
    """The next call starts 19 ms after the sed's result (a scripted agent is fast): a change
    stamped inside the sed's window belongs to the sed, however close the next call is."""
    events = [call(13, 7.956, "bash", command=f"sed -i s/a/b/ {SKILL}/{RUNNER}"),
              result(14, 8.059, 13, "bash"),
              call(16, 8.078, "bash", command=f"python3 {SKILL}/{RUNNER} x"),
              result(17, 8.306, 16, "bash")]
    (c,) = attribute_changes([change(RUNNER, 8.04)], events, SKILL)
    assert c.event_seq == 13
    (late,) = attribute_changes([change(RUNNER, 8.065)], events, SKILL)  # between the two
    assert late.event_seq == 13  # nearer the sed's end than the next call's start


def test_an_edit_read_late_by_the_watch_is_the_edit_not_the_call_that_followed():
    """CI (2 busy cores): the agent's edit_file of SKILL.md ended, its next call (bash) began
    22 ms later, and the watch's thread stamped the edit 0.4 s after it happened: inside the
    bash call's window. The write tool naming the file just before is what made it."""
    events = [call(5, 2.000, "edit_file", path=f"{SKILL}/SKILL.md"),
              result(6, 2.010, 5, "edit_file", paths_written=[f"{SKILL}/SKILL.md"]),
              call(8, 2.032, "bash", command=f"python3 {SKILL}/{RUNNER} segment_train"),
              result(9, 4.000, 8, "bash")]
    (c,) = attribute_changes([change("SKILL.md", 2.41)], events, SKILL)
    assert (c.event_seq, c.tool, c.attribution) == (5, "edit_file", "recorded")
    # without the edit's record: by time, the write tool naming the file just before
    (c,) = attribute_changes([change("SKILL.md", 2.41)], unrecorded(events), SKILL)
    assert (c.event_seq, c.tool, c.attribution) == (5, "edit_file", "direct")
    # a change to the file the edit did not name, or (no record) long after it, stays the
    # bash call's
    (runner,) = attribute_changes([change(RUNNER, 2.41)], events, SKILL)
    assert (runner.event_seq, runner.attribution) == (8, "during_call")
    (later,) = attribute_changes([change("SKILL.md", 3.5)], unrecorded(events), SKILL)
    assert (later.event_seq, later.attribution) == (8, "during_call")
