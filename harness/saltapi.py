"""salt-api (``rest_cherrypy``) beside the stack's master, for load runs.

The API authenticates one user by Salt's ``sharedsecret`` external auth:
the password is a secret generated per stack. By default that user is the
load user, granted exactly what the console users of
``benchmarks/load/locustfile.py`` call (:data:`LOAD_PERMISSIONS`): named
execution functions and two named runners, no wheel, no ``salt.cmd``, no
regular expression that matches everything. On loopback salt-api speaks
plain HTTP; on any other address it serves TLS with a self-signed
certificate generated per stack (``pki/api/``), which clients verify.

Its configuration is a ``master.d/saltapi.conf`` include next to the master's
configuration, written before the master starts: the master must know the
eauth settings to issue tokens, and ``salt-api`` reads the same files.
Start-up is confirmed by a real ``POST /login`` that returns a token.
"""

from __future__ import annotations

import datetime
import html
import ipaddress
import json
import re
import secrets
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeAlias

import yaml

from harness.errors import HarnessError
from harness.master import MasterSettings, salt_script
from harness.ports import LOOPBACK, is_listening
from harness.processes import ManagedProcess

EAUTH: Final = "sharedsecret"
DEFAULT_USER: Final = "saltfleet-load"
#: one eauth grant: a function name (every minion), or ``{target: [names]}``,
#: or ``{"@runner": [names]}``
Grant: TypeAlias = str | dict[str, list[str]]


def named(function: str) -> str:
    """The grant of exactly ``function``: Salt matches grants as regular
    expressions from the start of the name only, so ``jobs.list_job`` alone
    would grant ``jobs.list_jobs`` (every user's jobs) too."""
    return re.escape(function) + "$"


#: what the load user may do, and nothing more: the functions the tasks of
#: benchmarks/load/locustfile.py and the tour's salt-api section call, each
#: exactly; ``jobs.list_job`` is what ``GET /jobs/<jid>`` runs
LOAD_PERMISSIONS: Final[tuple[Grant, ...]] = (
    *map(
        named,
        ("test.ping", "test.version", "pkg.list_pkgs", "pillar.items", "pillar.get"),
    ),
    {"@runner": [named("ratelimit.status"), named("jobs.list_job")]},
)
#: the netapi clients those calls use (Salt 3006+ enables none by default);
#: no wheel client: nothing the harness's users do needs one
CLIENTS: Final = ("local", "local_async", "runner")
INCLUDE_FILE: Final = "saltapi.conf"
START_TIMEOUT: Final = 60.0
LOGIN_TIMEOUT: Final = 15.0


@dataclass(frozen=True)
class ApiSettings:
    """What the stack's salt-api looks like; ``port=None`` picks a free one."""

    port: int | None = None
    #: the address salt-api listens on and clients use; another address of
    #: this machine lets locust workers elsewhere reach it
    host: str = LOOPBACK
    user: str = DEFAULT_USER
    #: CherryPy worker threads (rest_cherrypy's ``thread_pool``; its default)
    thread_pool: int = 100
    #: lifetime of a token in seconds (the master's ``token_expire``)
    token_expire: int = 12 * 3600
    #: the user's eauth grants
    permissions: tuple[Grant, ...] = LOAD_PERMISSIONS
    #: where the TLS certificate and key are, made there if missing (one for
    #: several stacks, e.g. a load run's variants); None: the stack's pki/api
    tls_dir: Path | None = None

    def tls_files(self, root: Path) -> tuple[Path, Path]:
        """The certificate and the private key salt-api of the stack in
        ``root`` serves TLS with."""
        directory = self.tls_dir or root / "pki" / "api"
        return directory / "api.crt", directory / "api.key"

    @property
    def tls(self) -> bool:
        """Whether salt-api serves TLS: on every address but loopback."""
        return not is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ApiCredentials:
    """How a client logs in: ``POST /login`` with these as JSON."""

    url: str
    user: str
    password: str
    eauth: str = EAUTH
    #: the certificate that verifies salt-api's TLS (self-signed); None: plain HTTP
    ca_file: str | None = None

    def login_body(self) -> dict[str, str]:
        """The JSON body of ``POST /login``."""
        return {"username": self.user, "password": self.password, "eauth": self.eauth}


class ApiError(HarnessError):
    """A request to salt-api failed; ``status`` is the HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class LoginError(ApiError):
    """``POST /login`` did not return a token."""


def login(credentials: ApiCredentials, timeout: float = LOGIN_TIMEOUT) -> str:
    """Log in to salt-api and return the token (``X-Auth-Token``)."""
    try:
        reply = api_request(
            credentials.url,
            "/login",
            credentials.login_body(),
            timeout,
            ca_file=credentials.ca_file,
        )
        token = reply["return"][0]["token"]
    except ApiError as exc:
        raise LoginError(str(exc), exc.status) from None
    except (KeyError, IndexError, TypeError):
        raise LoginError(
            f"POST {credentials.url}/login returned no token: {reply!r}"
        ) from None
    return str(token)


def api_request(
    url: str,
    path: str,
    body: Any,
    timeout: float,
    token: str | None = None,
    ca_file: str | None = None,
) -> Any:
    """POST ``body`` as JSON to ``url + path``; the decoded JSON reply.
    ``ca_file`` verifies an ``https`` URL against that certificate."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token is not None:
        headers["X-Auth-Token"] = token
    request = urllib.request.Request(
        url + path, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        context = ssl.create_default_context(cafile=ca_file) if ca_file else None
        with urllib.request.urlopen(
            request, timeout=timeout, context=context
        ) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        text = exc.read().decode(errors="replace")
        raise ApiError(
            f"POST {url}{path}: HTTP {exc.code}: {_error_text(text)}", exc.code, text
        ) from None
    except (OSError, ValueError) as exc:
        raise ApiError(f"POST {url}{path}: {exc}") from None


def _error_text(body: str) -> str:
    """The message of a salt-api error: the ``return`` of its JSON body
    (patch 0018), the ``<p>`` of CherryPy's HTML error page (an unpatched
    salt-api, or a proxy), or else the start of the body."""
    try:
        reply = json.loads(body)
    except ValueError:
        reply = None
    if isinstance(reply, dict) and isinstance(reply.get("return"), str):
        text = reply["return"]
    else:
        found = re.search(r"<p>([^<]*)</p>", body)
        text = html.unescape(found.group(1)) if found else body
    return " ".join(text.split())[:300]


def write_certificate(host: str, crt: Path, key_file: Path) -> None:
    """A new self-signed certificate for ``host`` in ``crt``, its private
    key (mode 0600) in ``key_file``; clients trust the certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.parent.chmod(0o700)
    key = ec.generate_private_key(ec.SECP256R1())
    try:
        alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        alt = x509.DNSName(host)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_file.touch(mode=0o600)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def render_config(
    settings: ApiSettings, port: int, password: str, root: Path
) -> dict[str, Any]:
    """The options salt-api and the master need, as a ``master.d`` include."""
    server: dict[str, Any] = {
        "host": settings.host,
        "port": port,
        "thread_pool": settings.thread_pool,
        "log_error_file": str(root / "log" / "api-cherrypy.log"),
    }
    if settings.tls:
        crt, key = settings.tls_files(root)
        server.update(ssl_crt=str(crt), ssl_key=str(key))
    else:
        server["disable_ssl"] = True
    return {
        "rest_cherrypy": server,
        "netapi_enable_clients": list(CLIENTS),
        "external_auth": {EAUTH: {settings.user: list(settings.permissions)}},
        "sharedsecret": password,
        "token_expire": settings.token_expire,
        "api_logfile": str(root / "log" / "api.log"),
        "api_pidfile": str(root / "run" / "salt-api.pid"),
    }


class SaltApi:
    """One ``salt-api`` process serving ``rest_cherrypy`` for one master."""

    def __init__(
        self, master: MasterSettings, settings: ApiSettings, port: int
    ) -> None:
        self.master = master
        self.settings = settings
        self.port = port
        scheme = "https" if settings.tls else "http"
        self.credentials = ApiCredentials(
            url=f"{scheme}://{settings.host}:{port}",
            user=settings.user,
            password=secrets.token_urlsafe(24),
            ca_file=str(settings.tls_files(master.root)[0]) if settings.tls else None,
        )
        self.process = ManagedProcess(
            "salt-api",
            [salt_script("salt-api"), "-c", str(master.conf_dir), "-l", "warning"],
            master.root / "log" / "salt-api.stdout.log",
            # the master's Salt: a stock master comes with its own salt-api
            env=master.environment(),
        )

    @property
    def url(self) -> str:
        """Where salt-api answers, ``http(s)://HOST:PORT``."""
        return self.credentials.url

    @property
    def log_file(self) -> Path:
        """The log salt-api writes itself (``api_logfile``)."""
        return self.master.root / "log" / "api.log"

    def configure(self) -> Path:
        """Write the ``master.d`` include (and, beyond loopback, a new
        certificate); before the master starts."""
        crt, key = self.settings.tls_files(self.master.root)
        if self.settings.tls and not (crt.exists() and key.exists()):
            write_certificate(self.settings.host, crt, key)
        include = self.master.conf_dir / "master.d" / INCLUDE_FILE
        include.parent.mkdir(parents=True, exist_ok=True)
        options = render_config(
            self.settings, self.port, self.credentials.password, self.master.root
        )
        include.write_text(yaml.safe_dump(options, default_flow_style=False))
        include.chmod(0o600)  # it holds the shared secret
        return include

    def start(self) -> None:
        """Start salt-api; return once a login returned a token."""
        _require_cherrypy()
        self.process.start()
        self.process.wait_until(
            lambda: is_listening(self.port, self.settings.host),
            timeout=START_TIMEOUT,
            what=f"listening on {self.url}",
        )
        try:
            self._first_login(time.monotonic() + START_TIMEOUT)
        except LoginError as exc:
            if not self.process.running():
                raise self.process.fail(
                    f"exited with code {self.process.returncode()} after start",
                    self.log_file,
                ) from None
            raise self.process.fail(
                f"started but cannot log in ({exc})", self.log_file
            ) from None
        self.process.remember_descendants()

    def _first_login(self, deadline: float) -> None:
        """Log in once; a login that times out is tried again until
        ``deadline``: salt-api listens before the master's workers answer,
        and on a loaded machine they may take longer than one login's
        timeout. Any answer (a 401 too) ends the wait."""
        while True:
            try:
                login(self.credentials)
                return
            except LoginError as exc:
                if exc.status is not None or time.monotonic() >= deadline:
                    raise
                if not self.process.running():
                    raise

    def stop(self) -> None:
        """Stop salt-api and its processes by pid."""
        self.process.stop()


def _require_cherrypy() -> None:
    try:
        import cherrypy  # noqa: F401
    except ImportError:
        raise HarnessError(
            "salt-api's rest_cherrypy needs CherryPy; install the project's "
            "`load` extra (pip install -e '.[load]')"
        ) from None
