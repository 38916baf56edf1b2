"""A checkout of this run's own: the MR flow's head, a git marketplace's ref. One task, so
the Prefect UI shows what was cloned and a head that cannot be had is a Failed task run with
git's reason."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from aeval.adapters.git import clone_at, without_credentials


class Checkout(BaseModel):
    """Where a per-run clone is and which commits it holds."""

    root: str = Field(description="The clone's working tree, at head.")
    head: str = Field(description="The commit checked out.")
    base: str | None = Field(None, description="The base commit, when one was asked for.")


def short(ref: str) -> str:
    """A 40-character sha as its first 12; any other ref as it is."""
    return ref[:12] if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref) else ref


@task(name="checkout", task_run_name="checkout {head}", cache_policy=NO_CACHE)
def checkout_repo(repo: str, head: str, into: str, base: str | None = None,
                  mr_iid: int | None = None) -> Checkout:
    """Clone ``repo`` into ``into`` and check out ``head`` (fetching it, or the MR's refs,
    when the clone lacks it). Raises GitError naming what could not be had."""
    h, b = clone_at(repo, Path(into), head, base=base, mr_iid=mr_iid)
    return Checkout(root=into, head=h, base=b)


__all__ = ["Checkout", "checkout_repo", "short", "without_credentials"]
