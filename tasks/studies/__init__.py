"""Beyond one run: the cross-run comparison and regrade reports (`compare`), uplift
(`uplift`), trigger trials (`triggers`), head against base (`head_vs_base`, with its
`comparative_grader`)."""
