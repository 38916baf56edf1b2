"""Deciding: the judge (`judge`: what was observed -> per-assertion verdicts and the case
status), case verdicts and the CI gate (`status`), the deterministic checks (`checks`),
documented commands (`documented`), what a doc-test block proves (`doctest`), the static check S0
(`static_check`), Δ attribution (`attribution`), resource coverage (`coverage`), and the
environment errors a change introduced (`introduced`)."""
