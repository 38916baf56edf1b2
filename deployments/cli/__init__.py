"""The `aeval` command line: the program (`program`: the warm process or this one), the parser
and `main` (`main`), the command modules (`evaluate`: run, sweep, compare, regrade; `info`:
validate, schema, runtimes, show; `init`: ``aeval init``; `trigger_deployment`: ``aeval
trigger``, the MR deployment from CI; `trigger_accuracy`: ``aeval trigger-accuracy``; `uplift`;
`post`; each defines its commands' options beside them), the options they run with, resolved
once from flags and settings (`options`), what is shared by them (`_common`) and what
`aeval` prints (`console`).
``python -m aeval.deployments.cli`` runs the program."""
