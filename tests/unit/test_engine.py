"""aeval's engine without a Prefect server: the window of case chains, concluding each group
as soon as its last chain is done, the classification of Prefect API failures, the throttle
by runtime and the retry rule. Futures here are real ones (a thread pool's); the httpx errors
are what Prefect's client raises."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.states import Completed, Failed

from aeval.tasks._engine import (
    Conclusions,
    RetryCase,
    api_failure,
    failure,
    retry_on_transient,
    throttle,
    windowed,
)
from aeval.tasks._engine.schedule import window_size

API = "http://127.0.0.1:4200/api"


# -- the window ---------------------------------------------------------------------------

def _never() -> int:
    raise AssertionError("asked the Dask cluster for its threads")


def test_a_thread_pool_smaller_than_the_run_is_the_window_and_no_dask_cluster_is_asked():
    assert window_size(100, 4, _never) == 4


def test_on_dask_the_window_is_twice_the_workers_threads_but_never_more_than_the_chains():
    assert window_size(100, None, lambda: 6) == 12
    assert window_size(5, None, lambda: 6) == 5


def test_every_chain_at_once_when_nothing_says_how_many_can_run():
    assert window_size(7, None, lambda: None) == 7
    assert window_size(1, None, _never) == 1  # one chain: no cluster started to ask
    assert window_size(0, 0, lambda: None) == 1


@pytest.mark.parametrize("window", [0, 1, 3, 50])
def test_windowed_keeps_at_most_the_window_submitted_and_runs_every_item_once(window):
    lock = threading.Lock()
    submitted = {"now": 0, "most": 0}

    def work(i: int) -> int:
        time.sleep(0.002 * (i % 3))
        return i * i

    def submit(i: int):
        with lock:
            submitted["now"] += 1
            submitted["most"] = max(submitted["most"], submitted["now"])
        return pool.submit(work, i)

    seen = []
    with ThreadPoolExecutor(max_workers=8) as pool:
        for item, future in windowed(list(range(20)), submit, window):
            assert future.done() and future.result() == item * item
            seen.append(item)
            with lock:
                submitted["now"] -= 1
    assert sorted(seen) == list(range(20))
    assert submitted["most"] <= max(1, window) + 1  # the next is submitted before the yield
    assert submitted["most"] >= min(max(1, window), 20)


def test_windowed_over_nothing_submits_nothing():
    assert list(windowed([], lambda _: pytest.fail("submitted"), 4)) == []


# -- concluding each group as soon as its last key is settled -----------------------------

def test_a_group_is_concluded_when_its_last_key_is_settled_and_not_before():
    concluded: list[int] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        def conclude(gi: int):
            concluded.append(gi)
            return pool.submit(lambda: gi)

        groups = [["a", "b"], ["c"], ["d"], []]
        c = Conclusions(groups, conclude, ["one", "two", "three", "four"], have={"d"})
        assert sorted(concluded) == [2, 3]  # nothing to wait for: concluded at once
        c.settled("a")
        assert sorted(concluded) == [2, 3]
        c.settled("b")
        assert concluded[-1] == 0
        c.settled("c")
        c.settled("c")  # a key settled twice concludes nothing twice
        assert sorted(concluded) == [0, 1, 2, 3]
        assert c.wait() == []


def test_a_conclusion_that_fails_is_named_in_one_line():
    def boom():
        raise ValueError("no aggregate\nfor this skill")

    with ThreadPoolExecutor(max_workers=1) as pool:
        c = Conclusions([["a"], ["b"]], lambda gi: pool.submit(boom if gi else (lambda: 1)),
                        ["seg [literal]", "ocr [literal]"])
        c.settled("a")
        c.settled("b")
        [why] = c.wait()
        assert why.startswith("ocr [literal]: ValueError: no aggregate") and "\n" not in why


def test_failure_is_none_for_a_result_and_the_exception_for_a_raise():
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert failure(pool.submit(lambda: 3)) is None
        assert failure(pool.submit(lambda: 1 / 0)).startswith("ZeroDivisionError: ")


# -- which exceptions are Prefect's API failing --------------------------------------------

def _status(url: str, code: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", url)
    return httpx.HTTPStatusError("refused", request=request,
                                 response=httpx.Response(code, request=request))


def test_a_refused_prefect_api_call_is_named_with_its_method_path_and_status():
    with temporary_settings({PREFECT_API_URL: API}):
        assert api_failure(_status(f"{API}/task_runs/", 503)) == \
            "POST /api/task_runs/: 503 Service Unavailable"
        assert api_failure(_status(f"{API}/artifacts/", 429)) == \
            "POST /api/artifacts/: 429 Too Many Requests"


def test_a_reset_or_timed_out_prefect_api_call_is_named_with_the_error():
    with temporary_settings({PREFECT_API_URL: API}):
        reset = httpx.ReadError("reset", request=httpx.Request("GET", f"{API}/flow_runs/x"))
        assert api_failure(reset) == "GET /api/flow_runs/x: ReadError"


def test_an_api_failure_is_found_behind_the_errors_raised_from_it():
    with temporary_settings({PREFECT_API_URL: API}):
        try:
            try:
                raise _status(f"{API}/logs/", 502)
            except httpx.HTTPStatusError as exc:
                raise RuntimeError("could not record the case") from exc
        except RuntimeError as outer:
            assert api_failure(outer) == "POST /api/logs/: 502 Bad Gateway"


@pytest.mark.parametrize("exc", [
    _status(f"{API}/flow_runs/", 404),  # an answer, not a busy server: aeval's own bug
    _status(f"{API}/flow_runs/", 422),
    _status("https://api.openai.com/v1/chat/completions", 503),  # a model API, not Prefect
    ValueError("aeval's own bug"),
])
def test_anything_else_is_not_prefects_api_failing(exc):
    with temporary_settings({PREFECT_API_URL: API}):
        assert api_failure(exc) is None


def test_a_circle_of_causes_ends():
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    with temporary_settings({PREFECT_API_URL: API}):
        assert api_failure(a) is None


# -- the throttle by runtime, and the retry rule -------------------------------------------

def test_throttle_holds_a_runtimes_chains_to_its_limit_in_this_process():
    lock = threading.Lock()
    running = {"literal": 0, "builtin": 0}
    most = dict(running)

    def chain(runtime: str, limit: int | None) -> None:
        with throttle(runtime, limit):
            with lock:
                running[runtime] += 1
                most[runtime] = max(most[runtime], running[runtime])
            time.sleep(0.02)
            with lock:
                running[runtime] -= 1

    with ThreadPoolExecutor(max_workers=12) as pool:
        for _ in range(6):
            pool.submit(chain, "literal", 2)
            pool.submit(chain, "builtin", None)
    assert most["literal"] == 2
    assert most["builtin"] > 2


def test_only_a_chain_that_asked_for_a_retry_is_retried():
    assert retry_on_transient(None, None, Failed(data=RetryCase("429 from the model API")))
    assert not retry_on_transient(None, None, Failed(name="SkillDefect", data=ValueError("x")))
    assert not retry_on_transient(None, None, Completed(data=1))


def test_the_engines_public_face_names_only_what_exists():
    import aeval.tasks._engine as engine

    assert engine.__all__ and all(getattr(engine, name) is not None for name in engine.__all__)
    with pytest.raises(AttributeError):
        engine.no_such_name  # noqa: B018
