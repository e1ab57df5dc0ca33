"""The signature helpers, against GitHub's published test vector and goalsui's scheme."""

from __future__ import annotations

import hashlib
import hmac

from goalsui.hooks import signing


def test_github_signature_matches_githubs_documented_example() -> None:
    # https://docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries
    secret, body = "It's a Secret to Everybody", b"Hello, World!"
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signing.sign_github(secret, body) == expected
    assert signing.verify_github(secret, body, expected)
    assert signing.verify_github(secret, body, expected.upper().replace("SHA256=", "sha256="))
    assert not signing.verify_github(secret, body + b" ", expected)
    assert not signing.verify_github("", body, signing.sign_github("", body))


def test_goalsui_signature_covers_timestamp_and_body() -> None:
    secret, body = "s3cret", b'{"a": 1}'
    sig = signing.sign(secret, 1_800_000_000, body)
    assert (
        sig == "sha256=" + hmac.new(b"s3cret", b'1800000000.{"a": 1}', hashlib.sha256).hexdigest()
    )
    assert signing.verify(secret, "1800000000", body, sig)
    assert not signing.verify(secret, "1800000001", body, sig)
    assert not signing.verify(secret, "1800000000", body + b"\n", sig)
    assert not signing.verify("other", "1800000000", body, sig)
    for bad in (None, "", sig[7:], "sha1=" + sig[7:], sig + "00", sig[:-1] + "g", " " * 71):
        assert not signing.verify(secret, "1800000000", body, bad)
    # A malformed timestamp is refused even with a correct signature over it.
    for ts in ("", "-1", "1e9", " 1", "1" * 13, "0x10"):
        assert not signing.verify(secret, ts, body, signing.sign(secret, ts, body))


def test_timestamps_and_delivery_ids() -> None:
    assert signing.parse_timestamp("1800000000") == 1_800_000_000
    assert signing.parse_timestamp(None) is None and signing.parse_timestamp("soon") is None
    assert signing.timestamp_fresh(1000, now=1300) and signing.timestamp_fresh(1300, now=1000)
    assert not signing.timestamp_fresh(1000, now=1301) and not signing.timestamp_fresh(
        1301, now=1000
    )
    assert signing.valid_delivery_id(signing.new_delivery_id())
    for bad in (None, "", "a b", "x" * 201, "caf\u00e9", "a\nb"):
        assert not signing.valid_delivery_id(bad)
    headers = signing.signed_headers("k", b"{}", "d-1", timestamp=5)
    assert headers[signing.SIGNATURE] == signing.sign("k", 5, b"{}")
    assert headers[signing.TIMESTAMP] == "5" and headers[signing.DELIVERY] == "d-1"
    github = signing.signed_headers("k", b"{}", "d-1", style="github")
    assert set(github) == {"Content-Type", signing.GITHUB_SIGNATURE, signing.GITHUB_DELIVERY}
