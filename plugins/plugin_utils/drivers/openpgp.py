# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fingerprints of an OpenPGP key file, so a repository key is checked against the fingerprint its vendor
publishes before apt trusts it (the check NVIDIA's and AMD's install guides ask for with gpg --show-keys). Pure.

dearmor()        the binary packets of an ASCII-armored key block (RFC 4880 section 6.2), or the bytes as given
packets()        (tag, body) of every packet, old and new packet formats (RFC 4880 section 4.2)
fingerprints()   the V4 fingerprint of every public key and subkey: SHA-1 of 0x99, the two-octet length and the
                 packet body (RFC 4880 section 12.2); V5/V6 keys are reported as unsupported
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

ARMOR = re.compile(rb"-----BEGIN PGP PUBLIC KEY BLOCK-----\r?\n(.*?)-----END PGP PUBLIC KEY BLOCK-----", re.S)
KEY_TAGS = {6: "key", 14: "subkey"}


def dearmor(data: bytes) -> bytes:
    """The packets of the first armored key block in data, or data itself when it is not armored."""
    match = ARMOR.search(data)
    if match is None:
        if data.lstrip().startswith(b"-----BEGIN"):
            raise RecipeError("the key file is ASCII-armored but holds no PGP PUBLIC KEY BLOCK")
        return data
    head, _sep, body = match.group(1).replace(b"\r\n", b"\n").partition(b"\n\n")
    if not _sep:  # no armor headers: the blank line may be missing
        body = head
    lines = [line.strip() for line in body.splitlines() if line.strip() and not line.startswith(b"=")]
    try:
        return base64.b64decode(b"".join(lines), validate=True)
    except binascii.Error as exc:
        raise RecipeError(f"the key file's armored block is not valid base64 ({exc})") from exc


def packets(raw: bytes) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    pos = 0
    while pos < len(raw):
        ctb = raw[pos]
        if not ctb & 0x80:
            raise RecipeError(f"not an OpenPGP key: byte {pos} is no packet header")
        if ctb & 0x40:  # new format
            tag, pos = ctb & 0x3F, pos + 1
            first = raw[pos] if pos < len(raw) else 0
            if first < 192:
                length, pos = first, pos + 1
            elif first < 224:
                length, pos = ((first - 192) << 8) + raw[pos + 1] + 192, pos + 2
            elif first == 255:
                length, pos = int.from_bytes(raw[pos + 1:pos + 5], "big"), pos + 5
            else:
                raise RecipeError("not a key file: partial body lengths appear only in data packets")
        else:  # old format
            tag, kind, pos = (ctb >> 2) & 0x0F, ctb & 0x03, pos + 1
            if kind == 3:
                raise RecipeError("not a key file: an indeterminate-length packet")
            size = (1, 2, 4)[kind]
            length, pos = int.from_bytes(raw[pos:pos + size], "big"), pos + size
        if pos + length > len(raw):
            raise RecipeError("the key file is truncated (a packet runs past its end)")
        out.append((tag, raw[pos:pos + length]))
        pos += length
    return out


def fingerprints(data: bytes) -> list[str]:
    """Upper-case hex fingerprints of the primary keys and subkeys in an OpenPGP key file (armored or binary)."""
    found = []
    for tag, body in packets(dearmor(data)):
        if tag not in KEY_TAGS:
            continue
        if not body or body[0] != 4:
            raise RecipeError(f"a version {body[0] if body else '?'} OpenPGP {KEY_TAGS[tag]}: only V4 keys "
                              "(what NVIDIA and AMD sign with) are read here")
        found.append(hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper())  # nosec B324
    if not found:
        raise RecipeError("the file holds no OpenPGP public key")
    return found


def normalize(fingerprint: str) -> str:
    """'EB69 3B30 ...' or 'eb693b...' -> 'EB693B...' (spaces, as vendors print them, are dropped)."""
    return re.sub(r"\s+", "", str(fingerprint)).upper()


def check(content_b64: str, expected: str, host: str, variable: str, source: str) -> dict[str, object]:
    """Whether the key file (base64, as slurp returns it) holds the expected key; the message says what was found."""
    want = normalize(expected)
    try:
        found = fingerprints(base64.b64decode(content_b64 or ""))
    except (RecipeError, binascii.Error) as exc:
        return {"ok": False, "fingerprints": [],
                "msg": f"{host}: the signing key from {source} could not be read: {exc}. Point the key URL at the "
                       f"vendor's armored key file, whose fingerprint is {want} ({variable})"}
    ok = want in found
    return {"ok": ok, "fingerprints": found,
            "msg": "" if ok else
            f"{host}: the signing key from {source} has fingerprint {', '.join(found)}; {variable} expects {want}, the "
            "key the vendor publishes. Check the URL or the mirror (a mirror that re-signs needs its own key and "
            f"fingerprint in {variable}); the downloaded file stays where apt would read it, so delete it before the "
            "next run"}
