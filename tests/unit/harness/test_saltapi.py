"""What the harness tells salt-api and the master: loopback without TLS,
the load user's eauth and permissions, the netapi clients a console uses."""

from __future__ import annotations

from pathlib import Path

from harness.master import MasterSettings
from harness.saltapi import ApiSettings, SaltApi, _error_text, render_config


def test_rest_cherrypy_on_loopback_without_tls():
    opts = render_config(ApiSettings(), 8123, "s3cret", Path("/srv/m"))
    assert opts["rest_cherrypy"]["host"] == "127.0.0.1"
    assert opts["rest_cherrypy"]["port"] == 8123
    assert opts["rest_cherrypy"]["disable_ssl"] is True
    assert opts["sharedsecret"] == "s3cret"
    assert opts["external_auth"] == {
        "sharedsecret": {"saltfleet-load": [".*", "@runner", "@wheel", "@jobs"]}
    }
    assert {"local", "local_async", "runner", "wheel"} <= set(
        opts["netapi_enable_clients"]
    )


def test_the_include_is_private_and_each_api_has_its_own_secret(tmp_path):
    master = MasterSettings(root=tmp_path, publish_port=1, ret_port=2)
    first = SaltApi(master, ApiSettings(host="10.1.2.3"), 8000)
    second = SaltApi(master, ApiSettings(), 8000)
    include = first.configure()
    assert include == tmp_path / "etc" / "salt" / "master.d" / "saltapi.conf"
    assert include.stat().st_mode & 0o077 == 0
    assert first.credentials.password != second.credentials.password
    assert first.url == "http://10.1.2.3:8000"


def test_the_message_of_cherrypys_error_page():
    page = (
        "<html><head><title>503 Service Unavailable</title></head><body>"
        "<h2>503 Service Unavailable</h2>\n<p>Salt master overloaded, retry\n"
        "later: the queue is full &amp; more</p><pre>Traceback</pre></body></html>"
    )
    assert _error_text(page) == (
        "Salt master overloaded, retry later: the queue is full & more"
    )
    assert _error_text('{"return": "x"}') == '{"return": "x"}'
