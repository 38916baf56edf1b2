"""Fakes of the outside world for tests: servers that run on loopback and record what they see.

- ``fake_gitlab.FakeGitLab``: the part of the GitLab REST API that aeval's delivery uses
  (project, merge request with diff refs, MR diffs, notes, discussions), with GitLab's
  validation of inline positions.
- ``fake_github.FakeGitHub``: the part of the GitHub REST API that aeval's delivery uses
  (pull request, its files with ``patch``, issue comments, reviews with comments, check runs),
  with GitHub's validation of review comment lines; ``apply_suggestion`` commits a
  suggestion the way GitHub's button does.
"""

from tests.fakes.fake_github import FakeGitHub, apply_suggestion, patch_from_texts
from tests.fakes.fake_gitlab import FakeGitLab, RecordedRequest, diff_from_texts

__all__ = ["FakeGitHub", "FakeGitLab", "RecordedRequest", "apply_suggestion", "diff_from_texts",
           "patch_from_texts"]
