"""One skill x runtime, once its cases are graded: `aggregate` (benchmark.json), `conclude`
(the phase), `suggest` (grounded fixes), `baseline` (last known good, regressions), and the
environment errors a change introduced (`introduced`); and before a skill has cases, its
contract drafted by a model (`draft_contract`, for ``aeval init``)."""
