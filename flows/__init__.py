"""Thin Prefect flows that only compose tasks."""
