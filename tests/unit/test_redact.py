"""Redaction of a declared secret in every form a tool could print it in."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus

import pytest

from aeval.isolation.redact import Redactor

CANARY = "hf_Q7vX2pLr9kT4mZ8wB3nY6cJ1dF5gH0sAe"  # looks like a Hugging Face token
ODD = 'p@ss/w0rd+"key"\\=é'  # URL, JSON and base64 special characters


def _b64_runs(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9+/_=-]{8,}", text)


def _recoverable(text: str, secret: str) -> bool:
    """Whether any base64/base64url run in ``text``, at any alignment, decodes to something
    holding 8 consecutive bytes of the secret."""
    raw = secret.encode()
    pieces = {raw[i:i + 8] for i in range(len(raw) - 7)}
    for run in _b64_runs(text):
        for alt in (None, b"-_"):
            for shift in range(4):
                chunk = run[shift:].rstrip("=")
                chunk = chunk[:len(chunk) // 4 * 4]
                try:
                    data = base64.b64decode(chunk, altchars=alt)
                except ValueError:
                    continue
                if any(p in data for p in pieces):
                    return True
    return False


@pytest.mark.parametrize("secret", [CANARY, ODD])
@pytest.mark.parametrize("encode", [
    lambda s: s,
    lambda s: s[::-1],
    lambda s: s.encode().hex(),
    lambda s: s.encode().hex().upper(),
    lambda s: quote(s, safe=""),
    lambda s: quote(s),
    lambda s: quote_plus(s),
    lambda s: json.dumps(s)[1:-1],
    lambda s: base64.b64encode(s.encode()).decode(),
    lambda s: base64.b64encode(s.encode()).decode().rstrip("="),
    lambda s: base64.urlsafe_b64encode(s.encode()).decode(),
    lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
], ids=["literal", "reversed", "hex", "HEX", "url", "url-path", "url-plus", "json",
        "b64", "b64-nopad", "b64url", "b64url-nopad"])
def test_each_encoding_is_redacted(secret, encode):
    form = encode(secret)
    text = f"token check: {form} (done)\n"
    out = Redactor({"HF_TOKEN": secret}).text(text)
    assert form not in out
    assert "[REDACTED:HF_TOKEN]" in out
    assert out.startswith("token check: ") and out.endswith(" (done)\n")


@pytest.mark.parametrize("prefix_len", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("urlsafe", [False, True])
def test_secret_inside_a_longer_base64_stream_at_every_alignment(prefix_len, urlsafe):
    blob = b"{\"user\": \"ci\", \"n\": 7}"[:prefix_len] + CANARY.encode() + b"\n--end of dump--"
    enc = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(blob).decode()
    assert _recoverable(enc, CANARY)  # the test's own detector sees the leak
    out = Redactor({"HF_TOKEN": CANARY}).text(f"payload={enc}")
    assert not _recoverable(out, CANARY)
    assert "[REDACTED:HF_TOKEN]" in out


def test_bytes_and_json_text_are_redacted():
    r = Redactor({"API": ODD})
    assert ODD.encode() not in r.bytes(b"x" + ODD.encode() + b"y")
    dumped = json.dumps({"out": f"key={ODD}"})
    assert json.dumps(ODD)[1:-1] not in r.text(dumped)
    assert json.loads(r.text(dumped)) == {"out": "key=[REDACTED:API]"}


def test_short_values_and_no_secrets_leave_text_alone():
    assert Redactor({"X": "abc"}).text("abc abc") == "abc abc"
    assert not Redactor({}) and Redactor({}).text("hello") == "hello"


def test_overlapping_forms_are_redacted_as_their_union():
    # the literal value followed by its reversal share characters: no piece may survive
    text = CANARY + CANARY[::-1]
    out = Redactor({"T": CANARY}).text(text)
    assert "hf_Q7" not in out and "eAs0H" not in out


@pytest.mark.parametrize("overlap", range(1, len(CANARY)))
def test_head_cut_through_a_secret_drops_it_whole(overlap):
    r = Redactor({"T": CANARY})
    keep = 100
    text = "a" * (keep - overlap) + CANARY + "b" * 50
    head = r.head(text, keep)
    assert len(head) <= keep
    assert CANARY[:min(overlap, 4)] not in head.replace("a", "")


@pytest.mark.parametrize("overlap", range(1, len(CANARY)))
def test_tail_cut_through_a_secret_drops_it_whole(overlap):
    r = Redactor({"T": CANARY})
    keep = 100
    text = "a" * 50 + CANARY + "b" * (keep - overlap)
    tail = r.tail(text, keep)
    assert len(tail) <= keep
    assert CANARY[-min(overlap, 4):] not in tail.replace("b", "")


@pytest.mark.parametrize("width", [8, 20, 60, 76])
def test_wrapped_base64_and_hex_are_redacted_raw_and_in_json(width):
    r = Redactor({"HF_TOKEN": CANARY})
    for enc in (base64.b64encode(CANARY.encode()).decode(), CANARY.encode().hex()):
        wrapped = "\n".join(enc[i:i + width] for i in range(0, len(enc), width)) + "\n"
        out = r.text(f"$ dump\n{wrapped}$ done\n")
        joined = out.replace("\n", "")
        assert enc[:12] not in joined and enc[-12:].rstrip("=") not in joined, out
        event = json.dumps({"output": wrapped})
        assert enc[:12] not in r.text(event).replace("\\n", "")


def test_logging_filter_redacts_message_args_and_exception(tmp_path):
    import logging

    from aeval.isolation.redact import RedactingFilter

    log_file = tmp_path / "aeval.log"
    logger = logging.getLogger("aeval.test.redact")
    handler = logging.FileHandler(log_file)
    handler.addFilter(RedactingFilter(Redactor({"HF_TOKEN": CANARY})))
    logger.addHandler(handler)
    try:
        logger.warning("preflight failed: %s", f"curl -H 'Authorization: {CANARY}'")
        try:
            raise RuntimeError(f"setup printed {base64.b64encode(CANARY.encode()).decode()}")
        except RuntimeError:
            logger.exception("case failed")
    finally:
        logger.removeHandler(handler)
        handler.close()
    text = log_file.read_text()
    assert CANARY not in text and base64.b64encode(CANARY.encode()).decode()[:12] not in text
    assert text.count("[REDACTED:HF_TOKEN]") == 2 and "RuntimeError" in text


# Two secrets whose matches meet in each way they can; nothing of either may be left.
OVERLAPS = [
    ("apart", {"A": "sk-live-4f9a", "B": "ghp_77Qx"}, "sk-live-4f9a then ghp_77Qx",
     "[REDACTED:A] then [REDACTED:B]"),
    ("touching", {"A": "sk-live-4f9a", "B": "ghp_77Qx"}, "sk-live-4f9aghp_77Qx",
     "[REDACTED:A][REDACTED:B]"),
    ("crossing", {"A": "sk-live-4f9a", "B": "4f9a-tail-88"}, "key=sk-live-4f9a-tail-88;",
     "key=[REDACTED:A];"),
    ("one inside the other", {"A": "sk-live-4f9a-0123456789", "B": "4f9a-01"},
     "key=sk-live-4f9a-0123456789;", "key=[REDACTED:A];"),
    ("same start, the longer wins", {"A": "sk-live", "B": "sk-live-4f9a-0123"},
     "key=sk-live-4f9a-0123;", "key=[REDACTED:B];"),
    ("same end", {"A": "sk-live-4f9a-0123", "B": "0123"}, "key=sk-live-4f9a-0123;",
     "key=[REDACTED:A];"),
    ("a chain of three", {"A": "aaaa-bbbb", "B": "bbbb-cccc", "C": "cccc-dddd"},
     "x aaaa-bbbb-cccc-dddd y", "x [REDACTED:A] y"),
]


@pytest.mark.parametrize(("secrets", "text", "expected"),
                         [pytest.param(*r[1:], id=r[0]) for r in OVERLAPS])
def test_each_overlap_shape_is_replaced_by_the_union(secrets, text, expected):
    r = Redactor(secrets)
    assert r.text(text) == expected
    assert r.bytes(text.encode()) == expected.encode()


def test_head_and_tail_keep_the_clean_text_around_a_secret():
    r = Redactor({"T": CANARY})
    text = "start " + CANARY + " end"
    assert r.head(text, 6) == "start "
    assert r.head(text, len(text)) == "start [REDACTED:T] end"
    assert r.tail(text, 4) == " end"
    assert r.tail(text, len(text)) == "start [REDACTED:T] end"
    assert r.tail(text.encode(), 100) == b"start [REDACTED:T] end"
    assert Redactor({}).head("plain", 3) == "pla" and Redactor({}).tail("plain", 3) == "ain"


def test_a_secret_of_four_characters_is_redacted_and_three_are_not():
    assert Redactor({"PIN": "7391"}).text("pin 7391 ok") == "pin [REDACTED:PIN] ok"
    assert Redactor({"PIN": "739"}).text("pin 739 ok") == "pin 739 ok"
    assert Redactor({"EMPTY": ""}).text("anything") == "anything"
    assert not Redactor({"PIN": "739"})


def test_every_occurrence_is_redacted_also_when_they_overlap():
    r = Redactor({"T": "abab"})
    assert r.text("x abababab y abab") == "x [REDACTED:T] y [REDACTED:T]"
    assert r.bytes(b"abab\nabab") == b"[REDACTED:T]\n[REDACTED:T]"


def test_a_form_two_secrets_share_is_named_after_the_first():
    r = Redactor({"B_TOKEN": "same-value-1", "A_TOKEN": "same-value-1"})
    assert r.text("v=same-value-1") == "v=[REDACTED:A_TOKEN]"


def test_longest_is_how_far_a_match_can_reach():
    assert Redactor({}).longest == 0
    r = Redactor({"T": CANARY})
    assert r.longest == 2 * len(CANARY.encode().hex())  # hex is the longest form here
    text = "a" * 64 + base64.b64encode(CANARY.encode()).decode() + "b" * 64
    for keep in range(60, 120, 7):  # the guarantee: no cut leaves a piece of the secret
        assert not _recoverable(r.head(text, keep), CANARY)
        assert not _recoverable(r.tail(text, keep), CANARY)


def test_the_logging_filter_passes_every_record_and_formats_its_arguments_once():
    import io
    import logging

    from aeval.isolation.redact import RedactingFilter

    for redactor in (Redactor({}), Redactor({"T": CANARY})):
        out = io.StringIO()
        handler = logging.StreamHandler(out)
        handler.addFilter(RedactingFilter(redactor))
        logger = logging.getLogger("aeval.test.redact.args")
        logger.addHandler(handler)
        try:
            logger.warning("rate %s%% of %d", "50", 3)
            logger.warning("literal 100%")
        finally:
            logger.removeHandler(handler)
        assert out.getvalue() == "rate 50% of 3\nliteral 100%\n"


def test_a_short_secret_does_not_stop_the_others():
    r = Redactor({"A_PIN": "abc", "B_TOKEN": "realsecret"})
    assert r.text("abc realsecret") == "abc [REDACTED:B_TOKEN]"


def test_occurrences_one_character_apart_are_both_redacted():
    assert Redactor({"PIN": "7777"}).text("pin 77777 end") == "pin [REDACTED:PIN] end"


def test_a_secret_ending_exactly_at_the_cut_is_kept_redacted():
    r = Redactor({"T": CANARY})
    text = "start " + CANARY + " end"
    assert r.head(text, 6 + len(CANARY)) == "start [REDACTED:T]"
    assert r.tail(text, len(CANARY) + 4) == "[REDACTED:T] end"
    assert r.tail(text.encode(), len(CANARY) + 4) == b"[REDACTED:T] end"


def test_url_forms_differ_on_slashes_and_spaces():
    secret = "my pass/word 42"
    r = Redactor({"P": secret})
    for form in ("my%20pass%2Fword%2042", "my+pass%2Fword+42", "my%20pass/word%2042"):
        assert r.text(f"u={form}&x") == "u=[REDACTED:P]&x", form


def test_json_without_ascii_escapes_is_redacted():
    r = Redactor({"P": ODD})
    form = json.dumps(ODD, ensure_ascii=False)
    assert r.text(form) == '"[REDACTED:P]"'


def test_wrapped_hex_in_raw_bytes_is_redacted():
    r = Redactor({"HF_TOKEN": CANARY})
    hexed = CANARY.encode().hex()
    wrapped = (hexed[:30] + "\n" + hexed[30:]).encode()
    out = r.bytes(b"dump:\n" + wrapped + b"\n")
    assert out == b"dump:\n[REDACTED:HF_TOKEN]\n"
