"""Declared secrets are redacted from every log handler: the console's, Prefect's API log
handler, aeval's progress lines."""

from __future__ import annotations

import base64
import io
import logging

from aeval.tasks.run.progress import redact_logs

SECRET = "ghp_logcanary_5Tq2Xw8Rz"


def test_every_handler_redacts_the_secret_and_its_encodings():
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("prefect.task_runs.test-redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        assert redact_logs({"GH_TOKEN": SECRET}) >= 1
        logger.warning("token %s, b64 %s", SECRET, base64.b64encode(SECRET.encode()).decode())
        try:
            raise RuntimeError(f"failed with {SECRET}")
        except RuntimeError:
            logger.exception("boom")
        text = out.getvalue()
        assert SECRET not in text and base64.b64encode(SECRET.encode()).decode() not in text
        assert "[REDACTED:GH_TOKEN]" in text and "boom" in text
        # a later run's call replaces the filter; with no secrets it adds none
        redact_logs({})
        logger.warning("plain %s", SECRET)
        assert out.getvalue().endswith(f"plain {SECRET}\n")
    finally:
        logger.removeHandler(handler)


def test_a_case_in_a_worker_adds_its_secrets_to_the_runs():
    """A Dask worker runs case chains of several cases: each adds its declared secrets, and
    the earlier ones stay redacted."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("prefect.task_runs.test-redaction-add")
    logger.addHandler(handler)
    logger.propagate = False
    other = "sk-live-worker2-9QpLm"
    try:
        redact_logs({"GH_TOKEN": SECRET})
        redact_logs({"STRIPE_KEY": other}, add=True)
        logger.warning("%s %s", SECRET, other)
        text = out.getvalue()
        assert SECRET not in text and other not in text
        assert "[REDACTED:GH_TOKEN]" in text and "[REDACTED:STRIPE_KEY]" in text
    finally:
        redact_logs({})
        logger.removeHandler(handler)


def test_a_records_stack_info_is_redacted_too():
    """`logger.warning(..., stack_info=True)` prints the stack under the message: a frame's
    source line holding the secret must not reach a handler."""
    from aeval.isolation.redact import RedactingFilter, Redactor

    secret = "hf_Q7vX2pLr9kT4mZ8wB3nY6cJ1dF5gH0sAe"
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactingFilter(Redactor({"HF_TOKEN": secret})))
    logger = logging.getLogger("aeval.test.stack")
    record = logger.makeRecord(
        logger.name, logging.WARNING, __file__, 1, "download failed", None, None,
        sinfo=f'Stack (most recent call last):\n  File "fetch.py", line 3, in <module>\n'
              f'    hub.login("{secret}")')
    handler.handle(record)
    text = out.getvalue()
    assert secret not in text and 'hub.login("[REDACTED:HF_TOKEN]")' in text
