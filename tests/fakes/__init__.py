"""Fakes of the outside world for tests: servers that run on loopback and record what they see.

- ``fake_gitlab.FakeGitLab``: the part of the GitLab REST API that aeval's delivery uses
  (project, merge request with diff refs, MR diffs, notes, discussions), with GitLab's
  validation of inline positions.
"""

from tests.fakes.fake_gitlab import FakeGitLab, RecordedRequest, diff_from_texts

__all__ = ["FakeGitLab", "RecordedRequest", "diff_from_texts"]
