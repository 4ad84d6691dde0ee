# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The keys of an OpenPGP key file, so a repository's signing key is checked against the fingerprint its vendor
publishes (NVIDIA's GPG-keys page, AMD's install guide) before apt trusts it. Pure.

dearmor()       the binary packets of an ASCII-armored key file (one key block, RFC 4880 section 6.2), or binary as is
packets()       (tag, body) of every packet, old and new packet formats (RFC 4880 section 4.2)
keys()          every primary key and subkey: kind, version and V4 fingerprint (SHA-1 of 0x99, the two-octet length
                and the packet body, RFC 4880 section 12.2)
check()         the file holds the expected primary key and no other (apt's Signed-By trusts every key of the file)
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

BEGIN, END = b"-----BEGIN PGP PUBLIC KEY BLOCK-----", b"-----END PGP PUBLIC KEY BLOCK-----"
KEY_TAGS = {6: "key", 14: "subkey"}
FINGERPRINT = re.compile(r"^[0-9A-F]{40}$")


def dearmor(data: bytes) -> bytes:
    """The packets of an ASCII-armored key file (one key block and nothing else), or data itself when it is binary."""
    text = data.replace(b"\r\n", b"\n")
    if BEGIN not in text and not text.lstrip().startswith(b"-----"):
        return data
    lines = text.strip().split(b"\n")
    if lines[0].strip() != BEGIN or lines.count(BEGIN) != 1 or lines[-1].strip() != END or END in lines[:-1]:
        raise RecipeError("the key file is not one ASCII-armored PGP PUBLIC KEY BLOCK and nothing else "
                          "(a signature, several blocks, or text around the block)")
    body = lines[1:-1]
    # armor headers ("Version: ...") end at the first blank line, when there are any
    if body and b": " in body[0] and b"" in [line.strip() for line in body]:
        body = body[[line.strip() for line in body].index(b"") + 1:]
    data_lines = [line.strip() for line in body if line.strip() and not line.strip().startswith(b"=")]
    try:
        return base64.b64decode(b"".join(data_lines), validate=True)
    except binascii.Error as exc:
        raise RecipeError(f"the key file's armored block is not valid base64 ({exc})") from exc


def _length(raw: bytes, pos: int, size: int) -> int:
    if pos + size > len(raw):
        raise RecipeError("the key file is truncated (a packet header runs past its end)")
    return int.from_bytes(raw[pos:pos + size], "big")


def packets(raw: bytes) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    pos = 0
    while pos < len(raw):
        ctb = raw[pos]
        if not ctb & 0x80:
            raise RecipeError(f"not an OpenPGP key: byte {pos} is no packet header")
        if ctb & 0x40:  # new format
            tag, pos = ctb & 0x3F, pos + 1
            first = _length(raw, pos, 1)
            if first < 192:
                length, pos = first, pos + 1
            elif first < 224:
                length, pos = ((first - 192) << 8) + _length(raw, pos + 1, 1) + 192, pos + 2
            elif first == 255:
                length, pos = _length(raw, pos + 1, 4), pos + 5
            else:
                raise RecipeError("not a key file: partial body lengths appear only in data packets")
        else:  # old format
            tag, kind, pos = (ctb >> 2) & 0x0F, ctb & 0x03, pos + 1
            if kind == 3:
                raise RecipeError("not a key file: an indeterminate-length packet")
            size = (1, 2, 4)[kind]
            length, pos = _length(raw, pos, size), pos + size
        if pos + length > len(raw):
            raise RecipeError("the key file is truncated (a packet runs past its end)")
        out.append((tag, raw[pos:pos + length]))
        pos += length
    return out


def fingerprint(body: bytes) -> str:
    return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()  # nosec B324 - RFC 4880 12.2


def keys(data: bytes) -> list[dict[str, object]]:
    """Every primary key and subkey of an OpenPGP key file (armored or binary): its kind, version and, for V4 keys,
    its upper-case hex fingerprint (V5/V6 keys are listed without one: NVIDIA and AMD sign with V4 keys)."""
    found: list[dict[str, object]] = [
        {"kind": KEY_TAGS[tag], "version": body[0] if body else 0,
         "fingerprint": fingerprint(body) if body[:1] == b"\x04" else None}
        for tag, body in packets(dearmor(data)) if tag in KEY_TAGS]
    if not found:
        raise RecipeError("the file holds no OpenPGP public key")
    return found


def fingerprints(data: bytes) -> list[str]:
    """The V4 fingerprints of the primary keys and subkeys, in file order."""
    return [str(k["fingerprint"]) for k in keys(data) if k["fingerprint"]]


def normalize(value: str) -> str:
    """'EB69 3B30 ...' or 'eb693b...' -> 'EB693B...' (spaces, as vendors print them, are dropped)."""
    return re.sub(r"\s+", "", str(value)).upper()


def check(content_b64: str, expected: str, host: str, variable: str, source: str, path: str = "") -> dict[str, object]:
    """Whether the key file (base64, as slurp returns it) holds the expected primary key and no other: apt's
    Signed-By trusts every key in the file, so a second key would be trusted too. The message says what was found."""
    want = normalize(expected)
    where = f" (downloaded to {path})" if path else ""
    if not FINGERPRINT.match(want):
        return {"ok": False, "fingerprints": [],
                "msg": f"{host}: {variable} is {expected!r}, not a fingerprint: give the key's 40 hex digits (a short "
                       "key id such as 3bf863cc is not enough), as gpg --show-keys prints them"}
    try:
        found = keys(base64.b64decode(content_b64 or ""))
    except (RecipeError, binascii.Error, ValueError) as exc:
        return {"ok": False, "fingerprints": [],
                "msg": f"{host}: the signing key from {source}{where} could not be read: {exc}. Point the key URL at "
                       f"an armored or binary key file whose fingerprint is {want} ({variable})"}
    primaries = [str(k["fingerprint"] or f"a version {k['version']} key") for k in found if k["kind"] == "key"]
    ok = primaries == [want]
    return {"ok": ok, "fingerprints": primaries,
            "msg": "" if ok else
            f"{host}: the signing key from {source}{where} holds {', '.join(primaries)}; {variable} expects {want} "
            "and only that key (apt trusts every key of the file). Check the key URL and the mirror; a mirror that "
            f"re-signs needs its own key URL and its fingerprint in {variable}. Nothing was installed where apt "
            "reads it"}
