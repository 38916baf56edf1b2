"""Every way aeval is started: the `aeval` command line, the Prefect deployments (prefect.yaml
and the serve entrypoint) and the GitLab CI template."""
