"""What setup gets from the host: the CA bundle and proxies, never any other variable."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.env import hostca


def test_only_ca_and_proxy_settings_reach_setup(tmp_path: Path) -> None:
    bundle = tmp_path / "corp.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n")
    dest = tmp_path / "setup"
    dest.mkdir()
    host = {
        "SSL_CERT_FILE": str(bundle),
        "HTTPS_PROXY": "http://proxy.corp:3128",
        "no_proxy": "localhost,.corp",
        "OPENAI_API_KEY": "sk-secret",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "HOME": "/root",
        "PATH": "/host/bin",
    }
    env = hostca.prepare(host, dest)
    assert "sk-secret" not in str(env)
    assert "secret" not in " ".join(env.values())
    assert env["HOME"] == "/tmp/setup-home"  # not the host's
    assert "PATH" not in env  # the build sets the image's own
    allowed = {*hostca.SETUP_ENV, *hostca.CA_VARS, *hostca.PROXY_VARS, "APT_CONFIG"}
    assert set(env) <= allowed
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS"):
        assert env[name] == hostca.CA_FILE
    assert env["npm_config_cafile"] == hostca.CA_FILE  # no `npm config set`: no .npmrc
    assert hostca.CA_FILE != "/etc/ssl/certs/ca-certificates.crt"  # beside, not over
    assert (dest / "ca.crt").read_text() == bundle.read_text()
    assert (env["HTTPS_PROXY"], env["no_proxy"]) == ("http://proxy.corp:3128", "localhost,.corp")
    apt = (dest / "apt.conf").read_text()
    assert f'Acquire::https::CAInfo "{hostca.CA_FILE}";' in apt
    assert 'Acquire::https::Proxy "http://proxy.corp:3128";' in apt


def test_bundle_falls_back_to_requests_then_the_system(tmp_path: Path) -> None:
    bundle = tmp_path / "r.pem"
    bundle.write_text("x")
    assert hostca.host_bundle({"SSL_CERT_FILE": "/missing", "REQUESTS_CA_BUNDLE": str(bundle)}) == (
        bundle
    )
    system = hostca.SYSTEM_BUNDLE if hostca.SYSTEM_BUNDLE.is_file() else None
    assert hostca.host_bundle({}) == system


def test_a_proxy_apt_cannot_quote_is_left_to_apt_itself(tmp_path: Path) -> None:
    env = hostca.prepare({"http_proxy": 'http://x";evil'}, tmp_path)
    assert env["http_proxy"] == 'http://x";evil'
    assert "evil" not in (tmp_path / "apt.conf").read_text()
