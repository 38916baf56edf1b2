"""One module per pipeline phase: a pure typed function, plus a thin Prefect @task around it."""
