"""Post a finished run on its merge or pull request, as the last step of a flow: the same
`post_to_forge` as `aeval post`, on the forge `choose_forge` picks. A forge's client library
is imported only when a run is posted there."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE


@task(name="post", task_run_name="post {run_dir}", cache_policy=NO_CACHE)
def post_run(run_dir: str, forge: str | None = None, number: int | str | None = None,
             project: str | None = None, url: str | None = None) -> str:
    """Post a finished run and say how it went, in one line. ``forge`` None: the forge the
    other arguments belong to (they are GitLab's: MR IID, project, server URL), else GitHub
    inside GitHub Actions, else GitLab. Never raises: a delivery failure must not hide the
    skill verdict (the caller records it in run.json)."""
    try:
        from aeval.tasks.deliver.forge import PostTarget, choose_forge, post_to_forge

        name = choose_forge(forge, gitlab_args=any(v is not None for v in (number, project,
                                                                             url)))
        posted = post_to_forge(run_dir, PostTarget(forge=name, number=number,
                                                   project=project, url=url))
        return f"posted on {posted.forge.title}, {posted.summary()}"
    except Exception as exc:
        return f"failed: {type(exc).__name__}: {str(exc)[:300]}"
