"""Minion keys: generated once by Salt's generator, cached, seeded into a
master's accepted keys, and loadable as Salt PrivateKey objects."""

from __future__ import annotations

import os
import stat

import pytest

from evil_minions.keys import (
    KeyStoreError,
    ensure_keys,
    load_private_key,
    seed_master,
    unseed_master,
)

IDS = ["evil-0001", "evil-0002", "evil-0003"]


@pytest.fixture(scope="module")
def keys_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys")
    ensure_keys(path, IDS, workers=2)
    return path


def test_keys_are_generated_private_and_reported(tmp_path):
    calls = []
    pubs = ensure_keys(
        tmp_path,
        IDS[:2],
        progress=lambda done, total: calls.append((done, total)),
        workers=1,
    )
    assert calls == [(0, 2), (1, 2), (2, 2)]
    assert set(pubs) == set(IDS[:2])
    pem = tmp_path / "evil-0001" / "minion.pem"
    assert stat.S_IMODE(os.stat(pem).st_mode) == 0o600
    assert pubs["evil-0001"].read_text().startswith("-----BEGIN PUBLIC KEY-----")


def test_cached_keys_are_kept(keys_dir):
    before = (keys_dir / "evil-0002" / "minion.pem").read_bytes()
    calls = []
    ensure_keys(keys_dir, IDS, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(3, 3)]
    assert (keys_dir / "evil-0002" / "minion.pem").read_bytes() == before


def test_every_minion_has_its_own_key(keys_dir):
    pubs = {(keys_dir / i / "minion.pub").read_text() for i in IDS}
    assert len(pubs) == len(IDS)


def test_seed_master_accepts_and_clears_pending(keys_dir, tmp_path):
    pki = tmp_path / "pki"
    (pki / "minions_pre").mkdir(parents=True)
    (pki / "minions_pre" / "evil-0001").write_text("stale")
    assert seed_master(keys_dir, pki, IDS) == 3
    assert not (pki / "minions_pre" / "evil-0001").exists()
    assert (pki / "minions" / "evil-0003").read_text() == (
        keys_dir / "evil-0003" / "minion.pub"
    ).read_text()
    assert seed_master(keys_dir, pki, IDS) == 0
    assert unseed_master(pki, IDS[:1]) == 1


def test_seed_master_names_a_missing_key(tmp_path):
    with pytest.raises(KeyStoreError, match="no public key for ghost"):
        seed_master(tmp_path, tmp_path / "pki", ["ghost"])


def test_loaded_key_works_with_salts_public_key(keys_dir):
    import salt.crypt

    private = load_private_key(keys_dir / "evil-0001")
    public = salt.crypt.PublicKey.from_file(str(keys_dir / "evil-0001" / "minion.pub"))
    secret = public.encrypt(b"session-key")
    assert private.decrypt(secret) == b"session-key"
    assert public.verify(b"payload", private.sign(b"payload"))


def test_load_private_key_names_the_path(tmp_path):
    with pytest.raises(KeyStoreError, match="cannot load private key"):
        load_private_key(tmp_path)


def test_forget_master_keys_unpins_an_earlier_master(keys_dir):
    from evil_minions.keys import forget_master_keys

    (keys_dir / "evil-0001" / "minion_master.pub").write_text("old master")
    assert forget_master_keys(keys_dir, IDS) == 1
    assert not (keys_dir / "evil-0001" / "minion_master.pub").exists()
    assert (keys_dir / "evil-0001" / "minion.pem").exists()


def test_each_run_pins_the_master_key_in_its_own_pki_dirs(tmp_path) -> None:
    """Two fleets with the same ids on two masters (parallel test stacks) must
    not replace each other's pinned master key in the shared key cache."""
    from evil_minions.keys import MASTER_KEY_NAME, run_pki_dirs

    keys = tmp_path / "keys"
    ensure_keys(keys, ["evil-0001"])
    first = run_pki_dirs(keys, tmp_path / "run-a", ["evil-0001"]) / "evil-0001"
    second = run_pki_dirs(keys, tmp_path / "run-b", ["evil-0001"]) / "evil-0001"
    (first / MASTER_KEY_NAME).write_text("master A")
    (second / MASTER_KEY_NAME).write_text("master B")
    assert (first / MASTER_KEY_NAME).read_text() == "master A"
    assert not (keys / "evil-0001" / MASTER_KEY_NAME).exists()
    cached = (keys / "evil-0001" / "minion.pem").read_text()
    assert (first / "minion.pem").read_text() == cached
    # a new run in the same run dir starts without the old pin
    again = run_pki_dirs(keys, tmp_path / "run-a", ["evil-0001"]) / "evil-0001"
    assert not (again / MASTER_KEY_NAME).exists()
