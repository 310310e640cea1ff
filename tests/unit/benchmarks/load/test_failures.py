"""How a failed salt-api request is counted: a refusal for load apart from
timeouts and server errors, whatever status code carries it."""

from __future__ import annotations

import json

import pytest

from benchmarks.load.failures import (
    FailureKind,
    classify,
    kind_of_error,
    missing_minions,
    server_error_cause,
)

OVERLOADED_PAGE = (
    "<html><body><h2>503 Service Unavailable</h2>"
    "<p>Salt master overloaded, retry later: the publish queue is full</p>"
    "</body></html>"
)


class ReadTimeout(Exception):
    """Named like requests' read timeout."""


@pytest.mark.parametrize(
    ("status", "text", "error", "kind"),
    [
        (503, OVERLOADED_PAGE, None, FailureKind.OVERLOADED),
        # the same refusal under another status code is still a refusal
        (500, OVERLOADED_PAGE, None, FailureKind.OVERLOADED),
        (
            200,
            '{"return": ["SaltMasterOverloadedError"]}',
            None,
            FailureKind.OVERLOADED,
        ),
        (
            503,
            "<p>Salt request timed out. The master is not responding.</p>",
            None,
            FailureKind.UNAVAILABLE,
        ),
        # the JSON bodies salt-api answers its HTTP errors with (patch 0018)
        (
            503,
            '{"status": 503, "return": "Salt master overloaded, retry later"}',
            None,
            FailureKind.OVERLOADED,
        ),
        (
            503,
            '{"status": 503, "return": "Salt request timed out. The master is'
            ' not responding."}',
            None,
            FailureKind.UNAVAILABLE,
        ),
        (504, "", None, FailureKind.TIMEOUT),
        (0, "", ReadTimeout("read timed out"), FailureKind.TIMEOUT),
        (0, "", ConnectionRefusedError("refused"), FailureKind.CONNECTION),
        (
            500,
            '{"return": "An unexpected error occurred"}',
            None,
            FailureKind.SERVER_ERROR,
        ),
        (502, "", None, FailureKind.SERVER_ERROR),
        (401, "", None, FailureKind.AUTH),
        (403, "", None, FailureKind.AUTH),
        (406, "", None, FailureKind.CLIENT_ERROR),
        (200, '{"return": [{"evil-0001": true}]}', None, None),
    ],
)
def test_classify(status, text, error, kind):
    assert classify(status, text, error) is kind


def test_the_kind_is_found_again_in_locusts_failure_csv():
    message = FailureKind.OVERLOADED.message("HTTP 503 master overloaded, retry later")
    assert kind_of_error(f"CatchResponseError({message!r})") == "overloaded"
    assert kind_of_error("CatchResponseError('timeout: HTTP 504')") == "timeout"
    assert kind_of_error("ConnectionResetError(104, 'reset')") == "other"


def test_missing_minions_of_a_local_return():
    assert missing_minions(["a", "b", "c"], {"a": True, "c": True}) == ["b"]
    assert missing_minions(["a"], "Minion did not return") == ["a"]
    assert missing_minions([], {}) == []


def test_a_server_error_names_the_exception_salt_api_reported():
    body = json.dumps(
        {
            "status": 500,
            "return": "Traceback (most recent call last):\n"
            '  File "salt/netapi/__init__.py", line 183, in run\n'
            "    return l_fun(*args)\n"
            "salt.exceptions.SaltClientError: Could not connect to the master\n",
        }
    )
    assert server_error_cause(body) == (
        "salt.exceptions.SaltClientError: Could not connect to the master"
    )
    assert (
        server_error_cause("<html><h2>500 Internal Server Error</h2>\n<p>boom</p>")
        == "500 Internal Server Error boom"
    )
    # an HTTP error's JSON body: its message (patch 0018)
    assert (
        server_error_cause(
            '{"status": 500, "return": "Could not serialize the return data'
            ' from Salt."}'
        )
        == "Could not serialize the return data from Salt."
    )
    assert server_error_cause("") == ""
    assert len(server_error_cause("KeyError: " + "x" * 500)) == 120
