"""
RSA keys of simulated minions: generated once, cached on disk, seeded into a master.

Every minion gets its own key pair in ``<keys_dir>/<minion_id>/minion.pem`` and
``minion.pub``. That directory is also the minion's Salt ``pki_dir``: Salt's
own ``AsyncAuth`` reads the key from there and caches the master's public key
(``minion_master.pub``) next to it, exactly as on a real minion.

Keys are made by Salt's own helper (``salt.crypt.gen_keys``). Generating 2048
bit keys costs tens of milliseconds each, so missing keys are generated in a
pool of worker processes and ``progress`` is called after every key.

:func:`prepare_keys` is the one way a fleet's keys are made ready before it
starts (the supervisor, ``python -m evil_minions keys`` and a harness all call
it): generate the missing ones, forget master keys pinned in an earlier run,
optionally accept them on a master.

.. code-block:: python

    from evil_minions import FleetConfig, prepare_keys

    cfg = FleetConfig(count=1000, keys_dir="/var/tmp/em-keys")
    prepare_keys(cfg, master_pki_dir="/etc/salt/pki/master", progress=print)
"""

from __future__ import annotations

import concurrent.futures
import filecmp
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from evil_minions.config import DEFAULT_KEYSIZE, FleetConfig
from evil_minions.errors import EvilMinionsError

PRIVATE_KEY_NAME: Final = "minion.pem"
PUBLIC_KEY_NAME: Final = "minion.pub"
#: Where Salt's AsyncAuth pins the master's public key after the first sign-in.
MASTER_KEY_NAME: Final = "minion_master.pub"

#: Master key directories that would shadow an accepted key: the master's key
#: cache checks rejected and pending before accepted.
_CONFLICTING_MASTER_DIRS: Final = ("minions_pre", "minions_rejected", "minions_denied")

ProgressCallback = Callable[[int, int], None]


class KeyStoreError(EvilMinionsError):
    """A key could not be generated, read or seeded; the message names the path."""


def minion_pki_dir(keys_dir: str | os.PathLike[str], minion_id: str) -> Path:
    """The Salt ``pki_dir`` of one simulated minion."""
    return Path(keys_dir) / minion_id


#: where a run keeps its minions' Salt pki dirs, under its run dir
RUN_PKI_DIR: Final = "pki"


def run_pki_dirs(
    keys_dir: str | os.PathLike[str],
    run_dir: str | os.PathLike[str],
    minion_ids: Iterable[str],
) -> Path:
    """
    Give every minion of a run a Salt ``pki_dir`` of its own under ``run_dir``
    holding a copy of its cached key pair; return the directory holding them.

    The master's key a minion pins on first sign-in (``minion_master.pub``)
    then lives with the run, not in the shared key cache: two fleets with the
    same ids on two masters (parallel test stacks) no longer replace each
    other's pin, which made one of them fail to authenticate over and over.
    An earlier run's pins in ``run_dir`` are dropped.
    """
    root = Path(run_dir) / RUN_PKI_DIR
    shutil.rmtree(root, ignore_errors=True)
    for minion_id in minion_ids:
        private, public = _key_paths(keys_dir, minion_id)
        pki = root / minion_id
        try:
            pki.mkdir(parents=True)
            shutil.copy2(private, pki / PRIVATE_KEY_NAME)
            shutil.copy2(public, pki / PUBLIC_KEY_NAME)
        except OSError as exc:
            raise KeyStoreError(f"cannot prepare {pki}: {exc.strerror}") from exc
    return root


def _key_paths(keys_dir: str | os.PathLike[str], minion_id: str) -> tuple[Path, Path]:
    pki = minion_pki_dir(keys_dir, minion_id)
    return pki / PRIVATE_KEY_NAME, pki / PUBLIC_KEY_NAME


def _generate_pair(keysize: int) -> tuple[str, str]:
    # Imported here so the worker processes of the pool pay for importing
    # salt.crypt only when they generate a key.
    import salt.crypt

    priv, pub = salt.crypt.gen_keys(keysize)
    return str(priv), str(pub)


def _write_pair(priv_path: Path, pub_path: Path, priv: str, pub: str) -> None:
    priv_path.parent.mkdir(parents=True, exist_ok=True)
    # Write the private key 0600 from the start and rename into place, so a
    # reader never sees a half-written or world-readable key.
    tmp = priv_path.with_suffix(".pem.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(priv)
    tmp.replace(priv_path)
    tmp_pub = pub_path.with_suffix(".pub.tmp")
    tmp_pub.write_text(pub, encoding="utf-8")
    tmp_pub.replace(pub_path)


def prepare_keys(
    cfg: FleetConfig,
    *,
    master_pki_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> int:
    """
    Make the keys of ``cfg``'s minions ready for a start; return how many were seeded.

    Missing key pairs are generated (:func:`ensure_keys`), master keys pinned
    in an earlier run are forgotten (:func:`forget_master_keys`) and, given
    ``master_pki_dir``, the public keys are accepted there
    (:func:`seed_master`; 0 is returned without it).

    .. code-block:: python

        prepare_keys(FleetConfig(count=3, keys_dir="keys"), master_pki_dir="pki")  # 3
    """
    ids = cfg.minion_ids()
    ensure_keys(cfg.keys_dir, ids, progress=progress, keysize=cfg.keysize)
    forget_master_keys(cfg.keys_dir, ids)
    if master_pki_dir is None:
        return 0
    return seed_master(cfg.keys_dir, master_pki_dir, ids)


def ensure_keys(
    keys_dir: str | os.PathLike[str],
    minion_ids: Sequence[str],
    *,
    progress: ProgressCallback | None = None,
    keysize: int = DEFAULT_KEYSIZE,
    workers: int | None = None,
) -> dict[str, Path]:
    """
    Make sure every minion in ``minion_ids`` has a key pair; return the public key paths.

    Existing pairs are kept (the cache); missing ones are generated with
    ``salt.crypt.gen_keys`` in ``workers`` processes (default: CPU count).
    ``progress(done, total)`` is called once up front and after each key, where
    ``done`` counts cached and generated keys alike.

    .. code-block:: python

        pubs = ensure_keys("keys", ["evil-0001", "evil-0002"])
        pubs["evil-0001"]  # Path("keys/evil-0001/minion.pub")
    """
    total = len(minion_ids)
    result: dict[str, Path] = {}
    missing: list[str] = []
    for minion_id in minion_ids:
        priv_path, pub_path = _key_paths(keys_dir, minion_id)
        if priv_path.is_file() and pub_path.is_file():
            result[minion_id] = pub_path
        else:
            missing.append(minion_id)
    done = total - len(missing)
    if progress:
        progress(done, total)
    if not missing:
        return result
    try:
        Path(keys_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KeyStoreError(f"cannot create keys dir {keys_dir}: {exc}") from exc

    workers = workers or os.cpu_count() or 1
    pool_size = max(1, min(workers, len(missing)))
    if pool_size == 1:
        for minion_id in missing:
            result[minion_id] = _store_new_pair(
                keys_dir, minion_id, _generate_pair(keysize)
            )
            done += 1
            if progress:
                progress(done, total)
        return result
    with concurrent.futures.ProcessPoolExecutor(max_workers=pool_size) as pool:
        futures = {pool.submit(_generate_pair, keysize): mid for mid in missing}
        for future in concurrent.futures.as_completed(futures):
            minion_id = futures[future]
            result[minion_id] = _store_new_pair(keys_dir, minion_id, future.result())
            done += 1
            if progress:
                progress(done, total)
    return result


def _store_new_pair(
    keys_dir: str | os.PathLike[str], minion_id: str, pair: tuple[str, str]
) -> Path:
    priv_path, pub_path = _key_paths(keys_dir, minion_id)
    try:
        _write_pair(priv_path, pub_path, *pair)
    except OSError as exc:
        raise KeyStoreError(
            f"cannot write key for {minion_id} in {priv_path.parent}: {exc}"
        ) from exc
    return pub_path


def seed_master(
    keys_dir: str | os.PathLike[str],
    master_pki_dir: str | os.PathLike[str],
    minion_ids: Iterable[str],
) -> int:
    """
    Accept the minions' keys on a master by copying them into ``<master_pki_dir>/minions/<id>``.

    Stale copies in ``minions_pre``, ``minions_rejected`` and ``minions_denied``
    are removed because the master's key cache would find those first. Returns
    how many accepted keys were written or replaced (unchanged ones are
    skipped). Keys must exist already (see :func:`ensure_keys`).

    .. code-block:: python

        seed_master("keys", "/etc/salt/pki/master", ["evil-0001"])  # 1
    """
    master_pki = Path(master_pki_dir)
    accepted_dir = master_pki / "minions"
    try:
        accepted_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KeyStoreError(f"cannot create {accepted_dir}: {exc}") from exc
    written = 0
    for minion_id in minion_ids:
        _, pub_path = _key_paths(keys_dir, minion_id)
        if not pub_path.is_file():
            raise KeyStoreError(
                f"no public key for {minion_id} at {pub_path}: run ensure_keys first"
            )
        for other in _CONFLICTING_MASTER_DIRS:
            stale = master_pki / other / minion_id
            if stale.is_file():
                stale.unlink()
        target = accepted_dir / minion_id
        if target.is_file() and filecmp.cmp(pub_path, target, shallow=False):
            continue
        shutil.copyfile(pub_path, target)
        written += 1
    return written


def forget_master_keys(
    keys_dir: str | os.PathLike[str], minion_ids: Iterable[str]
) -> int:
    """
    Drop the master public keys the minions pinned in an earlier run; return how many.

    Salt's ``AsyncAuth`` refuses a master whose key differs from the pinned
    ``minion_master.pub`` ("The Salt Master server's public key did not
    authenticate!"). Cached minion keys outlive the masters they met -- every
    test stack makes a new master key -- so a fleet starts like freshly
    installed minions and trusts the master it is pointed at on first sign-in.
    """
    removed = 0
    for minion_id in minion_ids:
        try:
            (minion_pki_dir(keys_dir, minion_id) / MASTER_KEY_NAME).unlink()
        except FileNotFoundError:
            continue
        removed += 1
    return removed


def unseed_master(
    master_pki_dir: str | os.PathLike[str], minion_ids: Iterable[str]
) -> int:
    """Remove the minions' accepted keys from a master; return how many were removed."""
    removed = 0
    for minion_id in minion_ids:
        target = Path(master_pki_dir) / "minions" / minion_id
        if target.is_file():
            target.unlink()
            removed += 1
    return removed


def load_private_key(pki_dir: str | os.PathLike[str]) -> Any:
    """
    A minion's private key as a ``salt.crypt.PrivateKey``, loaded without validation.

    ``cryptography`` checks an RSA private key's consistency when loading it,
    which costs ~60 ms of CPU per 2048-bit key: a minute for a 1000-minion
    start. These keys were generated by :func:`ensure_keys` through Salt's own
    generator, so the check is skipped; the object is Salt's ``PrivateKey`` in
    every other respect.
    """
    import salt.crypt
    from cryptography.hazmat.primitives import serialization

    priv_path = Path(pki_dir) / PRIVATE_KEY_NAME
    try:
        pem = priv_path.read_bytes()
        key = serialization.load_pem_private_key(
            pem, password=None, unsafe_skip_rsa_key_validation=True
        )
    except (OSError, ValueError) as exc:
        raise KeyStoreError(f"cannot load private key {priv_path}: {exc}") from exc
    private = salt.crypt.PrivateKey.__new__(salt.crypt.PrivateKey)
    # What PrivateKey.__init__ sets, minus the validating load.
    private.key = key
    private._signer = None
    return private
