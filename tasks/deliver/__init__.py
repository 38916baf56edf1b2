"""What aeval says on a merge or pull request, from a finished run folder: the run read for a
request (`read_run`), what every forge shares (`placement`: inline or fallback, edit or create or
retire), the bodies written (`bodies`), one planner per forge (`gitlab`, `github`), and the
flow's last step (`post`). The forges' clients are `aeval.adapters.forges`."""
