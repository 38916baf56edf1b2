"""`replay` restores a recorded run into a fresh workspace: what a tampered recording plants
(a symlink to a host file, a deletion outside the skill copy) never reaches past it."""

from __future__ import annotations

from pathlib import Path

from aeval.adapters.runtimes.replay import ReplayRuntime
from aeval.artifacts import (
    ChangeMade,
    EvalMetadata,
    GraderInfo,
    Grading,
    GradingSummary,
    SelfCorrection,
)
from aeval.events import EndEvent
from aeval.isolation.redact import Redactor
from aeval.run.store import write_model
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, ExecutionResult


def recording(tmp_path: Path, deleted: list[str]) -> Path:
    rec = tmp_path / "recording"
    (rec / "outputs" / "reports").mkdir(parents=True)
    (rec / "outputs" / "reports" / "summary.md").write_text("# mIoU 0.81\n")
    (rec / "skill_after" / "scripts").mkdir(parents=True)
    (rec / "skill_after" / "scripts" / "train.py").write_text("print('patched')\n")
    recorder = EventRecorder(rec / "events.jsonl", Redactor())
    recorder.emit(EndEvent, final_text="Trained.", status="completed")
    recorder.close()
    changes = [ChangeMade(id=f"C{i}", path=p, change="deleted", diff="")
               for i, p in enumerate(deleted, 1)]
    write_model(rec / "grading.json", Grading(
        skill="segmentation", case_id="train", runtime="builtin", status="fail",
        status_reason="", summary=GradingSummary(passed=0, failed=0, ungraded=0, total=0,
                                                 pass_rate=None, first_attempt_pass_rate=None,
                                                 terminal_pass_rate=None),
        self_correction=SelfCorrection(was_needed=True, changes_made=changes),
        grader=GraderInfo(model=None, protocol_fidelity=True)))
    return rec


def replay(tmp_path: Path, rec: Path) -> tuple[Path, Path]:
    ws, skill, _ = replay_result(tmp_path, rec)
    return ws, skill


def replay_result(tmp_path: Path, rec: Path) -> tuple[Path, Path, ExecutionResult]:
    ws = tmp_path / "ws"
    skill = ws / ".agents" / "skills" / "segmentation"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: segmentation\ndescription: d\n---\n")
    (skill / "scripts" / "train.py").write_text("print('shipped')\n")
    request = ExecutionRequest(prompt="Train.", case_id="train", workspace=ws,
                               home=tmp_path / "home", skill_name="segmentation",
                               skill_description="d", skill_dir=skill,
                               env={}, raw_log=tmp_path / "raw.log")
    recorder = EventRecorder(tmp_path / "events.jsonl", Redactor())
    result = ReplayRuntime({"train": rec}).run(request, recorder)
    recorder.close()
    return ws, skill, result


def test_recorded_outputs_and_edits_are_restored(tmp_path):
    rec = recording(tmp_path, deleted=["SKILL.md"])
    ws, skill = replay(tmp_path, rec)
    assert (ws / "reports" / "summary.md").read_text() == "# mIoU 0.81\n"
    assert (skill / "scripts" / "train.py").read_text() == "print('patched')\n"
    assert not (skill / "SKILL.md").exists()


def test_a_planted_symlink_in_a_recording_is_not_followed(tmp_path):
    host = tmp_path / "host-secret.txt"
    host.write_text("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\n")
    rec = recording(tmp_path, deleted=[])
    (rec / "outputs" / "reports" / "creds.txt").symlink_to(host)
    (rec / "skill_after" / "notes").symlink_to(tmp_path)
    ws, skill = replay(tmp_path, rec)
    assert not (ws / "reports" / "creds.txt").exists()
    assert not (skill / "notes").exists()
    assert (ws / "reports" / "summary.md").is_file()


def test_a_deletion_outside_the_skill_copy_is_not_applied(tmp_path):
    keep = tmp_path / "ws" / "important.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("data\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("host\n")
    rec = recording(tmp_path, deleted=["../../important.txt", str(outside), "scripts"])
    _, skill = replay(tmp_path, rec)
    assert keep.read_text() == "data\n" and outside.read_text() == "host\n"
    assert (skill / "scripts" / "train.py").is_file()


def test_a_replay_takes_the_recorded_wall_time_so_a_regrade_judges_the_recorded_run(tmp_path):
    rec = recording(tmp_path, deleted=[])
    assert replay_result(tmp_path / "a", rec)[2].wall_s < 5  # no metadata: the replay's own
    write_model(rec / "eval_metadata.json", EvalMetadata(
        run_id="r1", skill="segmentation", skill_path="/m/segmentation", case_id="train",
        runtime="builtin", tier="per-skill", contract="/m/segmentation/eval.config",
        prompt="Train.", expected_outcome="A model.", required_credentials=[],
        wall_s=812.5))
    assert replay_result(tmp_path / "b", rec)[2].wall_s == 812.5
