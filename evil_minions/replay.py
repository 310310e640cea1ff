"""
Replay of a real minion's returns, for functions the simulator does not model.

A replay file is JSON::

    {
      "format": "evil_minions.replay/1",
      "minion_id": "real-minion",          # id the returns were recorded from
      "salt_version": "3008.3",
      "recorded_at": "2026-01-01T12:00:00Z",
      "entries": [
        {"fun": "network.interfaces", "arg": [], "kwarg": {},
         "return": {...}, "retcode": 0, "out": null},
        ...
      ]
    }

A simulated minion looks a call up by function name and arguments; if no
entry has exactly those arguments the first entry of that function is used.
Every occurrence of the recorded minion id in the return (in strings and in
dict keys) is replaced by the replaying minion's own id.

Record with :func:`record_from_client` (drives a real minion through Salt's
``LocalClient``) or :func:`record_from_returns` (returns you already have).

.. code-block:: python

    import salt.client
    from evil_minions import replay

    replay.record_from_client(
        salt.client.LocalClient(mopts=master_opts), "real-minion",
        ["network.interfaces", replay.ReplayCall("cmd.run_all", ("uptime",))],
        "replay.json",
    )
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Protocol

from evil_minions.errors import EvilMinionsError

FORMAT: Final = "evil_minions.replay/1"


class ReplayError(EvilMinionsError):
    """A replay file cannot be read or written, or a recording failed."""


def split_publication_args(arg: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
    """
    Split a publication's ``arg`` list into positional args and keyword args.

    The master packs keyword arguments as dicts marked ``__kwarg__: True``;
    ``__pub_*`` keys are Salt's publication metadata and are dropped.
    """
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for item in arg or ():
        if isinstance(item, dict) and item.get("__kwarg__") is True:
            kwargs.update(
                {
                    k: v
                    for k, v in item.items()
                    if k != "__kwarg__" and not k.startswith("__pub_")
                }
            )
        else:
            args.append(item)
    return args, kwargs


def _call_key(fun: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    # JSON with sorted keys is a stable identity for "these arguments" and
    # matches what the file stores.
    return json.dumps([fun, list(args), dict(kwargs)], sort_keys=True, default=str)


def substitute_id(value: Any, old: str, new: str) -> Any:
    """Replace ``old`` by ``new`` in every string and dict key inside ``value``."""
    if not old or old == new:
        return value
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {
            substitute_id(k, old, new): substitute_id(v, old, new)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [substitute_id(v, old, new) for v in value]
    if isinstance(value, tuple):
        return tuple(substitute_id(v, old, new) for v in value)
    return value


@dataclasses.dataclass(frozen=True)
class ReplayCall:
    """One call to record: a function with its arguments."""

    fun: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __hash__(self) -> int:
        # Calls are dict keys in record_from_returns; arguments may be
        # unhashable (dicts, lists), their JSON form is not.
        return hash(_call_key(self.fun, self.args, self.kwargs))


@dataclasses.dataclass(frozen=True)
class ReplayEntry:
    """One recorded return."""

    fun: str
    arg: list[Any]
    kwarg: dict[str, Any]
    ret: Any
    retcode: int = 0
    out: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored in the file."""
        return {
            "fun": self.fun, "arg": self.arg, "kwarg": self.kwarg,
            "return": self.ret, "retcode": self.retcode, "out": self.out,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayEntry:
        """Inverse of :meth:`to_dict`."""
        return cls(
            fun=str(data["fun"]),
            arg=list(data.get("arg", [])),
            kwarg=dict(data.get("kwarg", {})),
            ret=data.get("return"),
            retcode=int(data.get("retcode", 0)),
            out=data.get("out"),
        )


class ReplayStore:
    """Recorded returns of one real minion, looked up per call."""

    def __init__(
        self, minion_id: str, entries: Iterable[ReplayEntry], *, salt_version: str = ""
    ) -> None:
        self.minion_id = minion_id
        self.salt_version = salt_version
        self.entries = list(entries)
        self._exact: dict[str, ReplayEntry] = {}
        self._by_fun: dict[str, ReplayEntry] = {}
        for entry in self.entries:
            self._exact.setdefault(_call_key(entry.fun, entry.arg, entry.kwarg), entry)
            self._by_fun.setdefault(entry.fun, entry)

    def __contains__(self, fun: object) -> bool:
        return fun in self._by_fun

    def functions(self) -> list[str]:
        """Names of the recorded functions."""
        return sorted(self._by_fun)

    def lookup(
        self, fun: str, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> ReplayEntry | None:
        """The entry for exactly these arguments, else the first of ``fun``, else ``None``."""
        return self._exact.get(_call_key(fun, args, kwargs)) or self._by_fun.get(fun)

    def replay(self, entry: ReplayEntry, minion_id: str) -> Any:
        """The return of ``entry`` as minion ``minion_id`` would have sent it."""
        return substitute_id(entry.ret, self.minion_id, minion_id)

    # -- files ---------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The whole file content."""
        return {
            "format": FORMAT,
            "minion_id": self.minion_id,
            "salt_version": self.salt_version,
            "recorded_at": datetime.datetime.now(datetime.UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            ),
            "entries": [e.to_dict() for e in self.entries],
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the store as a replay file (atomically)."""
        tmp = f"{os.fspath(path)}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(
                    self.to_dict(),
                    handle,
                    indent=1,
                    sort_keys=True,
                    default=_json_default,
                )
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError) as exc:
            raise ReplayError(f"cannot write replay file {path}: {exc}") from exc

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ReplayStore:
        """Read a replay file; raises :class:`ReplayError` naming the problem."""
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            raise ReplayError(f"cannot read replay file {path}: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ReplayError(
                f"{path} is not a replay file: expected format {FORMAT!r}"
            )
        try:
            entries = [ReplayEntry.from_dict(e) for e in data["entries"]]
            return cls(
                str(data["minion_id"]),
                entries,
                salt_version=str(data.get("salt_version", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ReplayError(f"malformed replay file {path}: {exc}") from exc


def _json_default(value: Any) -> Any:
    # Salt returns may hold bytes or sets; keep them readable rather than fail.
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


class _LocalClientLike(Protocol):
    def cmd(
        self,
        tgt: str,
        fun: str,
        arg: Sequence[Any] = ...,
        timeout: int | None = ...,
        tgt_type: str = ...,
        ret: str = ...,
        jid: str = ...,
        full_return: bool = ...,
        kwarg: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> Mapping[str, Any]: ...  # fmt: skip


def record_from_returns(
    minion_id: str,
    returns: Mapping[str | ReplayCall, Any],
    path: str | os.PathLike[str],
    *,
    salt_version: str = "",
) -> ReplayStore:
    """
    Write a replay file from returns you already have.

    Keys are function names (recorded without arguments) or :class:`ReplayCall`.

    .. code-block:: python

        record_from_returns("real-1", {"network.get_hostname": "real-1"}, "replay.json")
    """
    entries = []
    for key, value in returns.items():
        call = key if isinstance(key, ReplayCall) else ReplayCall(str(key))
        entries.append(ReplayEntry(call.fun, list(call.args), dict(call.kwargs), value))
    store = ReplayStore(minion_id, entries, salt_version=salt_version)
    store.save(path)
    return store


def record_from_client(
    client: _LocalClientLike,
    minion_id: str,
    calls: Iterable[str | ReplayCall],
    path: str | os.PathLike[str],
    *,
    timeout: int = 60,
) -> ReplayStore:
    """
    Run ``calls`` on the real minion ``minion_id`` through a ``salt.client.LocalClient``
    and write what it returned as a replay file.

    Raises :class:`ReplayError` naming the call if the minion did not answer.
    """
    entries = []
    salt_version = ""
    for item in calls:
        call = item if isinstance(item, ReplayCall) else ReplayCall(item)
        result = client.cmd(
            minion_id,
            call.fun,
            arg=list(call.args),
            kwarg=dict(call.kwargs) or None,
            timeout=timeout,
            full_return=True,
        )
        data = result.get(minion_id) if result else None
        if not isinstance(data, Mapping) or "ret" not in data:
            raise ReplayError(
                f"{minion_id} did not return {call.fun} within {timeout}s"
            )
        entries.append(
            ReplayEntry(
                fun=call.fun,
                arg=list(call.args),
                kwarg=dict(call.kwargs),
                ret=data["ret"],
                retcode=int(data.get("retcode", 0) or 0),
                out=data.get("out"),
            )
        )
        if call.fun == "test.version" and isinstance(data["ret"], str):
            salt_version = data["ret"]
    store = ReplayStore(minion_id, entries, salt_version=salt_version)
    store.save(path)
    return store
