"""Post a finished run on its merge request, as the last step of a flow. python-gitlab is
imported only when a run is posted."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE


@task(name="post", task_run_name="post {run_dir}", cache_policy=NO_CACHE)
def post_run(run_dir: str, mr_iid: int | None = None, project_id: str | None = None,
             gitlab_url: str | None = None) -> str:
    """Post a finished run on its MR and say how it went, in one line. Never raises: a
    delivery failure must not hide the skill verdict (the caller records it in run.json)."""
    try:
        from aeval.tasks.deliver.gitlab import post_to_gitlab

        return f"posted: {post_to_gitlab.fn(run_dir, mr_iid, project_id, gitlab_url).summary()}"
    except Exception as exc:
        return f"failed: {type(exc).__name__}: {str(exc)[:300]}"
