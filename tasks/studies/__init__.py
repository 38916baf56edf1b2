"""Beyond one run: the cross-run comparison and regrade reports (`compare`), uplift
(`uplift`), trigger trials (`triggers`)."""
