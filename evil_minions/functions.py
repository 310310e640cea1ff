"""
The execution functions a simulated minion answers, and how a job becomes a return.

:func:`execute` mirrors what ``salt.minion.Minion._thread_return`` does with
a publication: resolve the function, bind the published arguments with Salt's
own ``load_args_and_kwargs`` (so invalid keyword arguments fail as on a real
minion), run it, derive ``retcode`` / ``success`` the same way, and turn
exceptions into the same error returns. A function that is neither modelled
here nor recorded in the replay file gets the real minion's answer for an
unavailable function: ``"'x.y' is not available."`` with retcode 1.

Modelled functions live on :class:`SimulatedFunctions`, one method per Salt
function with Salt's signature; :data:`FUNCTIONS` maps Salt names to them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import shlex
import traceback
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Final, Protocol, TypeVar

import salt.defaults.exitcodes as exitcodes

from evil_minions.config import TimingModel
from evil_minions.grains import SALT_VERSION
from evil_minions.jobs import JobTracker
from evil_minions.packages import PackageSet, compare_versions
from evil_minions.pkgstate_apply import SLS as PKGSTATE_SLS
from evil_minions.pkgstate_apply import apply_package_states, managed_packages
from evil_minions.replay import ReplayStore, split_publication_args
from evil_minions.states import split_mods, synthetic_state_run

log = logging.getLogger(__name__)
_T = TypeVar("_T")

#: Salt's retcodes, read from Salt: a state run that could not start or
#: compile, a run with a failed state, a pillar with errors
EX_OK: Final[int] = exitcodes.EX_OK
EX_GENERIC: Final[int] = exitcodes.EX_GENERIC
EX_STATE_COMPILER_ERROR: Final[int] = exitcodes.EX_STATE_COMPILER_ERROR
EX_STATE_FAILURE: Final[int] = exitcodes.EX_STATE_FAILURE
EX_PILLAR_FAILURE: Final[int] = exitcodes.EX_PILLAR_FAILURE

#: the first line of a state run refused for pillar errors (salt.modules.state)
PILLAR_FAILURE_HEADER: Final = "Pillar failed to render with the following messages:"

#: Outputter a real minion attaches to the return of these functions.
_OUTPUTTERS: Final = {
    "state.apply": "highstate",
    "state.highstate": "highstate",
    "state.sls": "highstate",
}


@dataclasses.dataclass(frozen=True)
class PillarRequest:
    """What a ``_pillar`` request asks for besides the minion's id and grains;
    ``None`` takes the minion's own setting."""

    pillarenv: str | None = None
    saltenv: str | None = None
    pillar_override: Mapping[str, Any] | None = None

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> PillarRequest:
        """The request a published ``pillar.items`` or state run names in its
        keyword arguments (``pillar=`` is the override)."""
        return cls(kwargs.get("pillarenv"), kwargs.get("saltenv"), kwargs.get("pillar"))


#: the minion's own pillarenv and saltenv, no override
OWN_PILLAR: Final = PillarRequest()


class MinionServices(Protocol):
    """What a simulated function may use of the minion running it."""

    @property
    def minion_id(self) -> str:
        """The minion's id."""

    @property
    def grains(self) -> Mapping[str, Any]:
        """The minion's synthetic grains."""

    @property
    def packages(self) -> PackageSet:
        """The minion's installed packages."""

    @property
    def jobs(self) -> JobTracker:
        """The minion's running jobs and job slots."""

    @property
    def pillar(self) -> Mapping[str, Any] | None:
        """The last pillar fetched from the master, if any."""

    async def fetch_pillar(self, request: PillarRequest = OWN_PILLAR) -> dict[str, Any]:
        """Send a ``_pillar`` request to the master and return the compiled pillar."""


@dataclasses.dataclass
class Runtime:
    """Process-wide settings the functions read; ``slowdown`` can change at runtime."""

    timing: TimingModel
    rng: random.Random
    state_count: int = 10
    #: fetch the pillar for every state run, as a real minion compiles it
    state_pillar: bool = True
    replay: ReplayStore | None = None
    replay_first: bool = False
    #: current global slowdown; starts at ``timing.slowdown`` (0 means "take that")
    slowdown: float = 0.0

    def __post_init__(self) -> None:
        if self.slowdown <= 0:
            self.slowdown = self.timing.slowdown


@dataclasses.dataclass(frozen=True)
class JobOutcome:
    """What a job returns: the value, Salt's retcode and an optional outputter."""

    ret: Any
    retcode: int = EX_OK
    out: str | None = None

    @property
    def success(self) -> bool:
        """``success`` field of the return, derived as the real minion derives it."""
        return self.retcode == EX_OK


def missing_function(fun: str) -> JobOutcome:
    """The return of a real minion for a function it does not have."""
    return JobOutcome(f"'{fun}' is not available.", EX_GENERIC, "nested")


def _traverse(data: Any, key: str, default: Any, delimiter: str) -> Any:
    # Salt's own traversal keeps "a:b:c" semantics (lists by index, etc.).
    import salt.utils.data

    return salt.utils.data.traverse_dict_and_list(data, key, default, delimiter)


class SimulatedFunctions:
    """
    One method per modelled Salt function, bound to one job.

    Method signatures follow the Salt functions they stand for, because the
    published arguments are bound to them with Salt's ``load_args_and_kwargs``.
    A method sets ``self.retcode`` where the real function sets
    ``__context__["retcode"]``.
    """

    def __init__(
        self, minion: MinionServices, runtime: Runtime, publication: Mapping[str, Any]
    ) -> None:
        self.minion = minion
        self.runtime = runtime
        self.publication = publication
        self.retcode = EX_OK

    # -- test -------------------------------------------------------------------

    async def test_ping(self) -> bool:
        """test.ping: always ``True``."""
        return True

    async def test_sleep(self, length: Any, fixed: bool = False) -> bool:
        """test.sleep: sleep ``length`` seconds, then ``True``."""
        # A string is parsed as Salt parses it (int(): "soon" fails alike); a
        # number keeps its fraction, which Salt would truncate, so that
        # scenarios can run sub-second jobs.
        seconds = float(length) if isinstance(length, int | float) else int(length)
        await asyncio.sleep(max(0.0, seconds))
        return True

    async def test_version(self) -> str:
        """test.version: the simulated Salt version."""
        return SALT_VERSION

    async def test_echo(self, text: Any) -> Any:
        """test.echo: ``text`` back."""
        return text

    # -- grains -----------------------------------------------------------------

    async def grains_items(self, sanitize: bool = False) -> dict[str, Any]:
        """grains.items: all grains."""
        return dict(self.minion.grains)

    async def grains_item(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """grains.item: the named grains (``a:b`` traverses), ``default`` for missing ones."""
        default = kwargs.get("default", "")
        delimiter = kwargs.get("delimiter", ":")
        return {
            str(a): _traverse(self.minion.grains, str(a), default, delimiter)
            for a in args
        }

    async def grains_get(
        self, key: str, default: Any = "", delimiter: str = ":", ordered: bool = True
    ) -> Any:
        """grains.get: one grain (``a:b`` traverses) or ``default``."""
        return _traverse(self.minion.grains, str(key), default, delimiter)

    # -- pillar -----------------------------------------------------------------

    async def pillar_items(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """pillar.items: the pillar the master compiles now."""
        # Like the real pillar.items: always a fresh compilation by the master.
        pillar = await self.minion.fetch_pillar(PillarRequest.from_kwargs(kwargs))
        if args:
            return _pillar_output(
                {str(a): pillar.get(str(a)) for a in args}, kwargs.get("unmask")
            )
        return _pillar_output(pillar, kwargs.get("unmask"))

    async def pillar_get(
        self,
        key: str,
        default: Any = "",
        merge: bool = False,
        merge_nested_lists: Any = None,
        delimiter: str = ":",
        pillarenv: str | None = None,
        saltenv: str | None = None,
        unmask: Any = None,
    ) -> Any:
        """pillar.get: one pillar key (``a:b`` traverses) or ``default``."""
        # Like the real pillar.get: the minion's in-memory pillar, which a real
        # minion compiled at start; fetch once if there is none yet.
        pillar = self.minion.pillar
        if pillar is None or pillarenv or saltenv:
            pillar = await self.minion.fetch_pillar(PillarRequest(pillarenv, saltenv))
        return _pillar_output(_traverse(pillar, str(key), default, delimiter), unmask)

    async def pillar_item(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """pillar.item: the named pillar keys."""
        pillar = self.minion.pillar
        if pillar is None:
            pillar = await self.minion.fetch_pillar()
        default = kwargs.get("default", "")
        delimiter = kwargs.get("delimiter", ":")
        found = {str(a): _traverse(pillar, str(a), default, delimiter) for a in args}
        return _pillar_output(found, kwargs.get("unmask"))

    async def saltutil_refresh_pillar(
        self, wait: bool = False, timeout: int = 30, clean_cache: bool = True
    ) -> bool:
        """saltutil.refresh_pillar: fetch the pillar again."""
        await self.minion.fetch_pillar()
        return True

    # -- saltutil ---------------------------------------------------------------

    async def saltutil_running(self) -> list[dict[str, Any]]:
        """saltutil.running: the proc records of the running jobs."""
        return self.minion.jobs.running()

    async def saltutil_find_job(self, jid: Any) -> dict[str, Any]:
        """saltutil.find_job: the proc record of ``jid`` or ``{}``."""
        return self.minion.jobs.find(str(jid))

    # -- state ------------------------------------------------------------------

    async def state_apply(self, mods: Any = None, **kwargs: Any) -> Any:
        """state.apply: a highstate, or the given SLS ``mods``."""
        return await self._state_run(mods, kwargs)

    async def state_highstate(
        self, test: Any = None, queue: bool = False, **kwargs: Any
    ) -> Any:
        """state.highstate: a synthetic highstate run."""
        return await self._state_run(None, dict(kwargs, test=test, queue=queue))

    async def state_sls(
        self,
        mods: Any,
        test: Any = None,
        exclude: Any = None,
        queue: bool = False,
        **kwargs: Any,
    ) -> Any:
        """state.sls: a synthetic run of the ``mods`` SLS files."""
        return await self._state_run(mods, dict(kwargs, test=test, queue=queue))

    async def _state_run(self, mods: Any, kwargs: Mapping[str, Any]) -> Any:
        """
        One state run, failing as ``salt.modules.state`` fails.

        In Salt's order: a concurrent run refuses (retcode 1), a pillar
        override that is not a dict is an invocation error, a pillar with
        ``_errors`` refuses the run (retcode 5, unless ``force=True``), and a
        run with a failed state has retcode 2 (Salt's own
        ``salt.utils.state.check_result`` decides).
        """
        import salt.exceptions
        import salt.utils.state

        jid = str(self.publication.get("jid", ""))
        if not kwargs.get("queue"):
            conflict = self._state_conflict(jid)
            if conflict:
                self.retcode = EX_STATE_COMPILER_ERROR
                return conflict
        override = kwargs.get("pillar")
        if (
            kwargs.get("pillar_enc") is None
            and override is not None
            and not isinstance(override, dict)
        ):
            raise salt.exceptions.SaltInvocationError(
                "Pillar data must be formatted as a dictionary, unless pillar_enc "
                "is specified."
            )
        pillar = await self._state_pillar(kwargs)
        errors = None if kwargs.get("force") else pillar.get("_errors")
        if errors:
            self.retcode = EX_PILLAR_FAILURE
            return [PILLAR_FAILURE_HEADER, *errors]
        run = await self._synthetic_run(
            split_mods(mods), managed_packages(pillar), kwargs
        )
        if not salt.utils.state.check_result(run):
            self.retcode = EX_STATE_FAILURE
        return run

    async def _state_pillar(self, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        """The pillar a state run sees: compiled afresh by the master, as a
        real minion's ``HighState`` does for every published state run (package
        states and pillar errors come from it); the last one fetched when
        ``--no-state-pillar`` spares the master those compiles."""
        if not self.runtime.state_pillar:
            return self.minion.pillar or {}
        return await self.minion.fetch_pillar(PillarRequest.from_kwargs(kwargs))

    async def _synthetic_run(
        self,
        sls_names: list[str],
        entries: Mapping[str, Mapping[str, Any]],
        kwargs: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The states of the run: synthetic ones for every SLS but
        ``pkgstate``, then the package states ``entries`` ask for (highstate
        or ``pkgstate`` only)."""
        duration = self.runtime.timing.state_run_duration(
            self.runtime.rng, self.runtime.slowdown
        )
        await asyncio.sleep(duration)
        test = _is_true(kwargs.get("test"))
        others = [m for m in sls_names if m != PKGSTATE_SLS]
        run: dict[str, Any] = {}
        if others or not sls_names:
            run = synthetic_state_run(
                mods=others,
                count=self.runtime.state_count,
                duration=duration,
                package_names=self.minion.packages.names()[:20],
                rng=self.runtime.rng,
                test=test,
            )
        if entries and (not sls_names or PKGSTATE_SLS in sls_names):
            run.update(
                apply_package_states(
                    self.minion.packages, entries, test=test, first_run_num=len(run)
                )
            )
        return run

    def _state_conflict(self, jid: str) -> list[str]:
        import salt.utils.jid

        return [
            'The function "{}" is running as PID {} and was started at {} with jid {}'.format(
                other["fun"],
                other["pid"],
                salt.utils.jid.jid_to_time(other["jid"]),
                other["jid"],
            )
            for other in self.minion.jobs.running_states(exclude_jid=jid)
        ]

    # -- pkg / cmd ----------------------------------------------------------------

    async def pkg_list_pkgs(
        self, versions_as_list: bool = False, **kwargs: Any
    ) -> dict[str, Any]:
        """pkg.list_pkgs: the minion's package set."""
        return self.minion.packages.list_pkgs(
            versions_as_list=_is_true(versions_as_list)
        )

    async def pkg_version(self, *names: Any, **kwargs: Any) -> str | dict[str, str]:
        """pkg.version: installed version of each name ('' if not installed)."""
        installed = self.minion.packages.installed()
        found = {str(n): installed.get(str(n), "") for n in names}
        return found[str(names[0])] if len(names) == 1 else found

    async def pkg_latest_version(
        self, *names: Any, **kwargs: Any
    ) -> str | dict[str, str]:
        """pkg.latest_version: the candidate newer than what is installed, else ''."""
        packages = self.minion.packages
        installed = packages.installed()
        found = {}
        for name in map(str, names):
            candidate = packages.candidate(name)
            current = installed.get(name)
            newer = candidate is not None and (
                current is None or compare_versions(candidate, current) > 0
            )
            found[name] = candidate if newer and candidate else ""
        return found[str(names[0])] if len(names) == 1 else found

    async def pkg_list_upgrades(
        self, refresh: Any = True, **kwargs: Any
    ) -> dict[str, str]:
        """pkg.list_upgrades: ``{name: candidate}`` of the installed packages with one."""
        packages = self.minion.packages
        upgrades = {}
        for name, current in packages.installed().items():
            candidate = packages.candidate(name)
            if candidate is not None and compare_versions(candidate, current) > 0:
                upgrades[name] = candidate
        return upgrades

    async def pkg_list_repo_pkgs(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """pkg.list_repo_pkgs: ``{name: [versions, newest first]}`` in the repositories."""
        import fnmatch

        packages = self.minion.packages
        patterns = [str(a) for a in args]
        return {
            name: packages.repo_versions(name)[::-1]
            for name in packages.catalog()
            if not patterns or any(fnmatch.fnmatch(name, p) for p in patterns)
        }

    async def cmd_run(self, cmd: Any, **kwargs: Any) -> str:
        """cmd.run: the output of a few well-known commands, else nothing."""
        output, retcode = await self._run_command(str(cmd))
        self.retcode = retcode
        return output

    async def _run_command(self, cmd: str) -> tuple[str, int]:
        """A tiny shell stand-in: a few commands get plausible output, the rest none."""
        try:
            words = shlex.split(cmd)
        except ValueError:
            words = cmd.split()
        grains = self.minion.grains
        if not words:
            return "", EX_OK
        name, rest = words[0], words[1:]
        if name == "echo":
            return " ".join(rest), EX_OK
        if name == "sleep" and rest:
            await asyncio.sleep(max(0.0, float(rest[0])))
            return "", EX_OK
        if name == "false":
            return "", EX_GENERIC
        if name == "exit":
            # the shell's exit status, as sh takes it (0-255)
            return "", int(rest[0]) % 256 if rest and rest[0].isdigit() else EX_OK
        canned: dict[str, str] = {
            "hostname": grains["fqdn"] if "-f" in rest else grains["host"],
            "uname": grains["kernelrelease"] if "-r" in rest else "Linux",
            "whoami": "root",
            "id": "root" if rest else "uid=0(root) gid=0(root) groups=0(root)",
            "uptime": " 12:00:00 up 42 days,  3:14,  0 users,  load average: 0.08, 0.03, 0.01",
            "cat": grains["machine_id"] if rest == ["/etc/machine-id"] else "",
        }
        return canned.get(name, ""), EX_OK


def _pillar_output(value: _T, unmask: Any) -> _T:
    """Pillar data as Salt 3008's pillar functions return it: every non-empty
    leaf masked unless the caller asked for ``unmask=True`` (same structure)."""
    import salt.utils.secret

    if _is_true(unmask):
        return value
    masked: _T = salt.utils.secret.serial(value)
    return masked


def _is_true(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value)


FunctionImpl = Callable[..., Coroutine[Any, Any, Any]]

#: Salt function name -> the method implementing it.
FUNCTIONS: Final[dict[str, Callable[[SimulatedFunctions], FunctionImpl]]] = {
    "test.ping": lambda f: f.test_ping,
    "test.sleep": lambda f: f.test_sleep,
    "test.version": lambda f: f.test_version,
    "test.echo": lambda f: f.test_echo,
    "grains.items": lambda f: f.grains_items,
    "grains.item": lambda f: f.grains_item,
    "grains.get": lambda f: f.grains_get,
    "pillar.items": lambda f: f.pillar_items,
    "pillar.get": lambda f: f.pillar_get,
    "pillar.item": lambda f: f.pillar_item,
    "saltutil.refresh_pillar": lambda f: f.saltutil_refresh_pillar,
    "saltutil.running": lambda f: f.saltutil_running,
    "saltutil.find_job": lambda f: f.saltutil_find_job,
    "state.apply": lambda f: f.state_apply,
    "state.highstate": lambda f: f.state_highstate,
    "state.sls": lambda f: f.state_sls,
    "pkg.list_pkgs": lambda f: f.pkg_list_pkgs,
    "pkg.version": lambda f: f.pkg_version,
    "pkg.latest_version": lambda f: f.pkg_latest_version,
    "pkg.available_version": lambda f: f.pkg_latest_version,
    "pkg.list_upgrades": lambda f: f.pkg_list_upgrades,
    "pkg.list_repo_pkgs": lambda f: f.pkg_list_repo_pkgs,
    "cmd.run": lambda f: f.cmd_run,
}


async def execute(
    minion: MinionServices, runtime: Runtime, publication: Mapping[str, Any]
) -> JobOutcome:
    """
    Run the publication's function as ``minion`` and return what it answers.

    Never raises for anything a publication can contain: every failure becomes
    the error return a real minion would send.
    """
    fun = publication.get("fun")
    if not isinstance(fun, str):
        # Multi-function publications (``salt '*' a.b,c.d``) are not modelled.
        return missing_function(
            ",".join(map(str, fun)) if isinstance(fun, list) else str(fun)
        )
    replay = runtime.replay
    if (
        replay is not None
        and fun in replay
        and (runtime.replay_first or fun not in FUNCTIONS)
    ):
        return _replayed(minion, replay, fun, publication)
    factory = FUNCTIONS.get(fun)
    if factory is None:
        return missing_function(fun)
    functions = SimulatedFunctions(minion, runtime, publication)
    impl = factory(functions)
    return await _call(fun, impl, functions, publication)


def _replayed(
    minion: MinionServices,
    replay: ReplayStore,
    fun: str,
    publication: Mapping[str, Any],
) -> JobOutcome:
    args, kwargs = split_publication_args(publication.get("arg", []))
    entry = replay.lookup(fun, args, kwargs)
    if entry is None:  # pragma: no cover - guarded by ``fun in replay``
        return missing_function(fun)
    return JobOutcome(replay.replay(entry, minion.minion_id), entry.retcode, entry.out)


async def _call(
    fun: str,
    impl: FunctionImpl,
    functions: SimulatedFunctions,
    publication: Mapping[str, Any],
) -> JobOutcome:
    import salt.exceptions
    import salt.minion

    try:
        args, kwargs = salt.minion.load_args_and_kwargs(
            impl, publication.get("arg", []), dict(publication)
        )
        value = await impl(*args, **kwargs)
    except salt.exceptions.CommandExecutionError as exc:
        return JobOutcome(f"ERROR: {exc}", EX_GENERIC, "nested")
    except (
        salt.exceptions.SaltInvocationError,
        salt.exceptions.SaltClientError,
    ) as exc:
        return JobOutcome(f"ERROR executing '{fun}': {exc}", EX_GENERIC, "nested")
    except TypeError as exc:
        # Python names the method; a real minion's message names Salt's
        # function. Any other exception (a ValueError of a non-numeric
        # test.sleep length) is "caused an exception", as on a real minion.
        message = str(exc).replace(f"{impl.__qualname__}(", f"{fun.split('.')[-1]}(")
        return JobOutcome(
            f"Passed invalid arguments to {fun}: {message}\n{impl.__doc__ or ''}",
            EX_GENERIC,
            "nested",
        )
    except Exception:
        log.warning("simulated %s failed", fun, exc_info=True)
        return JobOutcome(
            f"The minion function caused an exception: {traceback.format_exc()}",
            EX_GENERIC,
            "nested",
        )
    retcode = functions.retcode
    # Same rule as salt.minion: a dict return with a false "result" or
    # "success" makes the job fail.
    if (
        retcode == EX_OK
        and isinstance(value, dict)
        and not all(value.get(k, True) for k in ("result", "success"))
    ):
        retcode = EX_GENERIC
    return JobOutcome(value, retcode, _OUTPUTTERS.get(fun))
