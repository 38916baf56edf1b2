"""Which exceptions are Prefect's API failing, not aeval: a call to this process's Prefect API
refused (408/429/5xx), reset or timed out after the client's own retries is the case's (or
the run's) environment error, retried with ``aeval run --resume``; anything else stays what
it is (a bug of aeval's own is an internal error). Needs no server: it reads the exception
and the configured API URL."""

from __future__ import annotations

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
"""Answers of a busy or restarting server (Prefect's client retries 408/429/502/503 itself)."""


def api_failure(exc: BaseException) -> str | None:
    """One line naming the Prefect API call and how it failed, when ``exc`` is (or was raised
    from) a call to this process's Prefect API that was refused (408/429/5xx), reset or timed
    out after the client's own retries (``PREFECT_CLIENT_MAX_RETRIES``, honouring the
    server's ``Retry-After``); None for anything else (a bug of aeval's own stays an internal
    error). A call to another host (a model API) is not Prefect's."""
    import httpx
    from prefect.settings import PREFECT_API_URL

    api = (PREFECT_API_URL.value() or "").rstrip("/")
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, httpx.HTTPStatusError | httpx.TransportError):
            try:
                request = e.request
            except RuntimeError:  # an error raised without its request
                request = None
            url = str(request.url) if request is not None else ""
            if url.startswith(api + "/") if api else "/api/" in url:
                where = f"{request.method} {request.url.path}"
                if isinstance(e, httpx.TransportError):
                    return f"{where}: {type(e).__name__}"
                if e.response.status_code in RETRYABLE_STATUS:
                    return f"{where}: {e.response.status_code} {e.response.reason_phrase}"
        e = e.__cause__ or e.__context__
    return None
