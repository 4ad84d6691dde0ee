"""Repository signing-key fingerprints, against what GnuPG itself reports for the same files (gpg --show-keys), and
the check the driver roles run before apt trusts a downloaded key."""
from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import openpgp
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

GPG = shutil.which("gpg")
needs_gpg = pytest.mark.skipif(GPG is None, reason="GnuPG (gpg) is the reference here and is not installed")


def gpg(home: Path, *args: str, data: bytes | None = None) -> bytes:
    env = {**os.environ, "GNUPGHOME": str(home)}
    proc = subprocess.run([GPG or "gpg", "--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", "", *args],
                          input=data, capture_output=True, check=False, env=env)
    assert proc.returncode == 0, f"gpg {' '.join(args)}: {proc.stderr.decode(errors='replace')}"
    return proc.stdout


@pytest.fixture(scope="module", name="keyring")
def fixture_keyring() -> Iterator[Path]:
    """Two keys as a vendor's key file may hold them: an RSA key with an RSA subkey, an ed25519 key. The keyring
    lives in a short /tmp path: gpg-agent's socket path must fit in 108 bytes (ansible-test's temp paths do not)."""
    home = Path(tempfile.mkdtemp(prefix="gpg", dir="/tmp"))
    home.chmod(0o700)
    try:
        yield from _keys(home)
    finally:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env={**os.environ, "GNUPGHOME": str(home)}, check=False,
                       capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def _keys(home: Path) -> Iterator[Path]:
    gpg(home, "--quick-gen-key", "Vendor RSA <rsa@example.invalid>", "rsa2048", "sign", "never")
    fpr = re.search(rb"^fpr:+([0-9A-F]{40}):", gpg(home, "--with-colons", "--list-keys", "rsa@example.invalid"), re.M)
    assert fpr
    gpg(home, "--quick-add-key", fpr.group(1).decode(), "rsa2048", "encr", "never")
    gpg(home, "--quick-gen-key", "Vendor EdDSA <ed@example.invalid>", "ed25519", "sign", "never")
    yield home


def gpg_fingerprints(home: Path, key_file: bytes) -> list[str]:
    """What gpg --show-keys prints for a key file: every fpr record, primary keys and subkeys."""
    listing = gpg(home, "--with-colons", "--show-keys", data=key_file).decode()
    return re.findall(r"^fpr:+([0-9A-F]{40}):", listing, re.M)


@needs_gpg
@pytest.mark.parametrize("who", ["rsa@example.invalid", "ed@example.invalid"])
@pytest.mark.parametrize("armor", [True, False], ids=["armored", "binary"])
def test_fingerprints_are_the_ones_gpg_reports(keyring: Path, who: str, armor: bool) -> None:
    exported = gpg(keyring, *(["--armor"] if armor else []), "--export", who)
    expected = gpg_fingerprints(keyring, exported)
    assert expected and openpgp.fingerprints(exported) == expected


@needs_gpg
def test_a_file_of_several_keys_lists_them_all_and_is_refused(keyring: Path) -> None:
    exported = gpg(keyring, "--armor", "--export")
    assert openpgp.fingerprints(exported) == gpg_fingerprints(keyring, exported)
    assert len(openpgp.fingerprints(exported)) == 3  # RSA key, its subkey, the ed25519 key
    rsa, _subkey, _ed = gpg_fingerprints(keyring, exported)
    # the vendor's key plus another: apt's Signed-By would trust both, so the file is refused
    result = openpgp.check(base64.b64encode(exported).decode(), rsa, "gpu-01", "v", "u")
    assert not result["ok"] and "expects " + rsa + " and only that key" in str(result["msg"])
    # a key with its own subkey is one key
    alone = gpg(keyring, "--armor", "--export", "rsa@example.invalid")
    assert openpgp.check(base64.b64encode(alone).decode(), rsa, "gpu-01", "v", "u")["ok"]


@needs_gpg
def test_armor_variants_gpg_reads(keyring: Path) -> None:
    """Armor headers, CRLF line ends, blank lines before the checksum and the end line: gpg reads them all."""
    armored = gpg(keyring, "--armor", "--export", "ed@example.invalid").decode()
    (mine,) = gpg_fingerprints(keyring, armored.encode())
    lines = armored.strip().split("\n")
    variants = {
        "headers": "\n".join([lines[0], "Version: GnuPG v2", "Comment: vendor key", *lines[1:]]),
        "crlf": "\r\n".join(lines) + "\r\n",
        "blank before the checksum and the end": "\n".join(
            [*lines[:-2], "", lines[-2], "", lines[-1]]),
    }
    for name, text in variants.items():
        assert gpg_fingerprints(keyring, text.encode()) == [mine], name
        assert openpgp.fingerprints(text.encode()) == [mine], name


@needs_gpg
def test_the_check_passes_the_right_key_and_names_the_wrong_one(keyring: Path) -> None:
    exported = gpg(keyring, "--armor", "--export", "ed@example.invalid")
    (mine,) = gpg_fingerprints(keyring, exported)
    content = base64.b64encode(exported).decode()
    spaced = " ".join(mine[i:i + 4] for i in range(0, 40, 4)).lower()  # as vendors print it
    assert openpgp.check(content, spaced, "gpu-01", "nvidia_driver_repo_key_fingerprint", "https://x/3bf863cc.pub")["ok"]
    nvidia = "EB693B3035CD5710E231E123A4B469963BF863CC"
    result = openpgp.check(content, nvidia, "gpu-01", "nvidia_driver_repo_key_fingerprint", "https://x/3bf863cc.pub",
                           "/etc/apt/keyrings/cuda-archive-keyring.asc.download")
    assert not result["ok"]
    assert str(result["msg"]).startswith(
        "gpu-01: the signing key from https://x/3bf863cc.pub (downloaded to /etc/apt/keyrings/cuda-archive-keyring.asc"
        f".download) holds {mine}; nvidia_driver_repo_key_fingerprint expects {nvidia} and only that key")
    short = openpgp.check(content, "3bf863cc", "gpu-01", "nvidia_driver_repo_key_fingerprint", "u")
    assert not short["ok"] and "not a fingerprint: give the key's 40 hex digits" in str(short["msg"])


@needs_gpg
def test_text_around_the_block_or_a_second_block_is_refused(keyring: Path) -> None:
    armored = gpg(keyring, "--armor", "--export", "ed@example.invalid")
    other = gpg(keyring, "--armor", "--export", "rsa@example.invalid")
    for data in (b"<html><pre>\n" + armored + b"</pre></html>\n", armored + other):
        with pytest.raises(RecipeError, match="not one ASCII-armored PGP PUBLIC KEY BLOCK and nothing else"):
            openpgp.fingerprints(data)


@pytest.mark.parametrize("data, message", [
    (b"<html>404 Not Found</html>", "byte 0 is no packet header"),
    (b"-----BEGIN PGP SIGNATURE-----\nabc\n-----END PGP SIGNATURE-----\n", "not one ASCII-armored PGP PUBLIC KEY"),
    (b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!!\n-----END PGP PUBLIC KEY BLOCK-----\n", "not valid base64"),
    (bytes([0x99, 0x01, 0x00, 0x04]), "truncated"),
    (bytes([0xC6, 0xC0]), "truncated"),
    (bytes([0xCD, 0x02, 0x41, 0x42]), "holds no OpenPGP public key"),  # a user id packet alone
])
def test_what_is_not_a_vendor_key_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        openpgp.fingerprints(data)
    result = openpgp.check(base64.b64encode(data).decode(), "AB" * 20, "gpu-01", "rocm_driver_repo_key_fingerprint",
                           "https://repo.radeon.com/rocm/rocm.gpg.key")
    assert not result["ok"] and str(result["msg"]).startswith(
        "gpu-01: the signing key from https://repo.radeon.com/rocm/rocm.gpg.key could not be read")


def test_a_version_5_key_has_no_v4_fingerprint_and_does_not_match() -> None:
    v5 = bytes([0xC6, 0x03, 0x05, 0x00, 0x00])
    assert openpgp.keys(v5) == [{"kind": "key", "version": 5, "fingerprint": None}]
    result = openpgp.check(base64.b64encode(v5).decode(), "AB" * 20, "gpu-01", "v", "u")
    assert not result["ok"] and "holds a version 5 key" in str(result["msg"])
