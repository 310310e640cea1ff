"""How a failed salt-api request is counted: by what an operator would do
about it.

=================  ==========================================================
kind               what salt-api answered
=================  ==========================================================
``overloaded``     the master refused the job for load
                   (``SaltMasterOverloadedError``: ``503`` "Salt master
                   overloaded, retry later"); retry later
``unavailable``    another ``503``: the master did not answer salt-api
                   (``SaltReqTimeoutError``) or is not running
``timeout``        ``504`` (``SaltClientTimeout``), or no response within the
                   client's timeout
``server_error``   ``500`` and any other ``5xx``
``auth``           ``401`` / ``403``: token expired or permission missing
``client_error``   any other ``4xx``
``connection``     no HTTP response at all (refused, reset)
``incomplete``     ``200``, but fewer minions returned than were targeted
=================  ==========================================================

A refusal for load is recognised by its message wherever it appears (a
``503`` today; a ``500`` or a ``200`` whose return carries the message is
counted as ``overloaded`` as well), so a change in the status code salt-api
maps it to does not hide it among the server errors.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable

OVERLOADED_TEXT = re.compile(r"master overloaded|SaltMasterOverloadedError", re.I)
_TIMEOUT_ERRORS = ("timeout", "timed out")


class FailureKind(enum.Enum):
    """The kinds of failed request; the module docstring says what each means."""

    OVERLOADED = "overloaded"
    UNAVAILABLE = "unavailable"
    TIMEOUT = "timeout"
    SERVER_ERROR = "server_error"
    AUTH = "auth"
    CLIENT_ERROR = "client_error"
    CONNECTION = "connection"
    INCOMPLETE = "incomplete"

    def message(self, detail: str) -> str:
        """The failure text locust records: ``kind: detail``; the summary
        finds the kind again in locust's failures CSV by this prefix."""
        return f"{self.value}: {detail}"


def classify(status: int, text: str, error: object = None) -> FailureKind | None:
    """The kind of failure of one response, or None if it succeeded.

    ``status`` is 0 when no response came (``error`` then says why);
    ``text`` is the response body.
    """
    if OVERLOADED_TEXT.search(text or ""):
        return FailureKind.OVERLOADED
    if status == 0 or (error is not None and status < 400):
        reason = f"{type(error).__name__} {error}".lower()
        if any(word in reason for word in _TIMEOUT_ERRORS):
            return FailureKind.TIMEOUT
        return FailureKind.CONNECTION
    if status == 503:
        return FailureKind.UNAVAILABLE
    if status == 504:
        return FailureKind.TIMEOUT
    if status >= 500:
        return FailureKind.SERVER_ERROR
    if status in (401, 403):
        return FailureKind.AUTH
    if status >= 400:
        return FailureKind.CLIENT_ERROR
    return None


_TAG = re.compile(r"<[^>]*>")
_EXCEPTION_LINE = re.compile(
    r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Timeout)\b.*)$", re.M
)


def server_error_cause(text: str, limit: int = 120) -> str:
    """What broke behind a ``500``: the last exception line of the traceback
    salt-api puts in its JSON body's ``return`` (``SaltClientError: ...``),
    cut to ``limit`` characters; without a traceback, the message in
    ``return`` (every error of a salt-api with patch 0018), or the first
    words of another body (tags of an HTML page from a proxy or an
    unpatched salt-api dropped); empty for an empty body.

    Locust groups failures by their text, so the cause makes each distinct
    error its own row in the failures CSV instead of one "HTTP 500".
    """
    try:
        body = json.loads(text)
    except ValueError:
        body = text
    if isinstance(body, dict):
        body = body.get("return", "")
    text = body if isinstance(body, str) else json.dumps(body)
    found = _EXCEPTION_LINE.findall(text)
    # no traceback (a message, an HTML error page): its first words
    words = found[-1] if found else _TAG.sub(" ", text)
    line = " ".join(words.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def missing_minions(targeted: Iterable[str], returned: object) -> list[str]:
    """The targeted minions without a return in a ``local`` client's reply."""
    answered = returned if isinstance(returned, dict) else {}
    return sorted(set(targeted) - set(answered))


_KIND_IN_ERROR = re.compile(
    r"\b(" + "|".join(kind.value for kind in FailureKind) + r"): "
)


def kind_of_error(error: str) -> str:
    """The kind a failure CSV's ``Error`` column names (locust writes it as
    ``CatchResponseError('timeout: HTTP 504')``); ``other`` if none."""
    found = _KIND_IN_ERROR.search(error)
    return found.group(1) if found else "other"
