"""What the harness tells salt-api and the master: plain HTTP on loopback
only, TLS with a generated certificate elsewhere, the load user's named
grants and the netapi clients they need."""

from __future__ import annotations

import ssl
from pathlib import Path

import yaml

from harness.master import MasterSettings
from harness.saltapi import (
    LOAD_PERMISSIONS,
    ApiSettings,
    SaltApi,
    _error_text,
    is_loopback,
    render_config,
)


def test_rest_cherrypy_on_loopback_without_tls():
    opts = render_config(ApiSettings(), 8123, "s3cret", Path("/srv/m"))
    assert opts["rest_cherrypy"]["host"] == "127.0.0.1"
    assert opts["rest_cherrypy"]["port"] == 8123
    assert opts["rest_cherrypy"]["disable_ssl"] is True
    assert "ssl_crt" not in opts["rest_cherrypy"]
    assert opts["sharedsecret"] == "s3cret"
    assert opts["netapi_enable_clients"] == ["local", "local_async", "runner"]


def test_the_load_user_is_granted_named_functions_only():
    opts = render_config(ApiSettings(), 8123, "s3cret", Path("/srv/m"))
    grants = opts["external_auth"]["sharedsecret"]["saltfleet-load"]
    assert grants == list(LOAD_PERMISSIONS)
    text = yaml.safe_dump(grants)
    for broad in (".*", "@wheel", "@jobs", "salt.cmd"):
        assert broad not in text, broad
    assert "@runner" not in grants  # runners only by name
    assert {"@runner": [r"ratelimit\.status$", r"jobs\.list_job$"]} in grants
    assert r"test\.ping$" in grants


def test_beyond_loopback_salt_api_serves_tls_with_a_new_certificate(tmp_path):
    settings = ApiSettings(host="10.1.2.3")
    assert settings.tls and not ApiSettings().tls
    assert is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0")
    master = MasterSettings(root=tmp_path, publish_port=1, ret_port=2)
    api = SaltApi(master, settings, 8000)
    api.configure()
    server = yaml.safe_load(api.configure().read_text())["rest_cherrypy"]
    assert "disable_ssl" not in server
    assert api.url == "https://10.1.2.3:8000"
    assert api.credentials.ca_file == server["ssl_crt"]
    assert Path(server["ssl_key"]).stat().st_mode & 0o077 == 0
    # the certificate is one a client can trust and names the address
    context = ssl.create_default_context(cafile=server["ssl_crt"])
    assert context.get_ca_certs()[0]["subject"] == ((("commonName", "10.1.2.3"),),)


def test_the_include_is_private_and_each_api_has_its_own_secret(tmp_path):
    master = MasterSettings(root=tmp_path, publish_port=1, ret_port=2)
    first = SaltApi(master, ApiSettings(host="10.1.2.3"), 8000)
    second = SaltApi(master, ApiSettings(), 8000)
    include = first.configure()
    assert include == tmp_path / "etc" / "salt" / "master.d" / "saltapi.conf"
    assert include.stat().st_mode & 0o077 == 0
    assert first.credentials.password != second.credentials.password
    assert first.url == "https://10.1.2.3:8000"
    assert second.url == "http://127.0.0.1:8000"


def test_the_message_of_cherrypys_error_page():
    page = (
        "<html><head><title>503 Service Unavailable</title></head><body>"
        "<h2>503 Service Unavailable</h2>\n<p>Salt master overloaded, retry\n"
        "later: the queue is full &amp; more</p><pre>Traceback</pre></body></html>"
    )
    assert _error_text(page) == (
        "Salt master overloaded, retry later: the queue is full & more"
    )
    # patch 0018's JSON body: its message
    assert _error_text('{"status": 503, "return": "Salt master overloaded"}') == (
        "Salt master overloaded"
    )
    assert _error_text('{"return": ["x"]}') == '{"return": ["x"]}'
    assert _error_text("plain text") == "plain text"
