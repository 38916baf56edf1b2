"""A run's data: the case plans (`plan`), the flows' parameters (`requests`), where every file
of a run goes (`layout`), the run store (`store`), and what a verdict depends on
(`fingerprint`)."""
