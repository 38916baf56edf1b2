"""The forges aeval reports on: GitLab (`gitlab`, python-gitlab) and GitHub (`github`,
PyGithub), and the one shape of a request's diff both give delivery (`diff`). What aeval
says there is built in `aeval.tasks.deliver`."""
