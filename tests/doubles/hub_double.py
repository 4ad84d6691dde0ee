#!/usr/bin/env python3
"""A loopback double of the Hugging Face Hub, for tests only (the real Hub is unreachable here).

It serves one directory as one model repository, speaking the subset of the Hub's HTTP API that
huggingface_hub (2.x) uses for `hf download` / snapshot_download, and that the collection's
weights_check module reads:

  GET  /api/models/<repo>/revision/<rev>[?blobs=true]   repo info: sha, siblings (with sizes and LFS sha256)
  GET  /api/models/<repo>/tree/<rev>[?recursive=true]   file listing (path, size, oid, lfs)
  HEAD /<repo>/resolve/<rev>/<file>                     X-Repo-Commit, ETag, X-Linked-Size, Content-Length
  GET  /<repo>/resolve/<rev>/<file>                     the bytes, with Range support (resumed downloads)

With --token-file the repo is gated: every request needs `Authorization: Bearer <token>` (else 401).
Each request is logged as a line of JSON (method, path, range, whether a token came) to --log; the
token itself is never written anywhere by the double.

Usage: hub_double.py --repo-id org/name --dir CHECKPOINT_DIR --port 8088 [--token-file F] [--log F] [--rate B/s]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LFS_SUFFIXES = (".safetensors", ".bin", ".pt")


class Repo:
    def __init__(self, repo_id: str, root: str) -> None:
        self.repo_id, self.root = repo_id, root
        self.files = sorted(os.path.relpath(os.path.join(d, n), root)
                            for d, _dirs, names in os.walk(root) for n in names)
        self._sha256: dict[str, str] = {}
        listing = "\n".join(f"{f}:{os.path.getsize(self.path(f))}" for f in self.files)
        self.sha = hashlib.sha1(listing.encode()).hexdigest()

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def sha256(self, name: str) -> str:
        if name not in self._sha256:
            digest = hashlib.sha256()
            with open(self.path(name), "rb") as handle:
                for block in iter(lambda: handle.read(2**20), b""):
                    digest.update(block)
            self._sha256[name] = digest.hexdigest()
        return self._sha256[name]

    def entry(self, name: str) -> dict[str, Any]:
        size = os.path.getsize(self.path(name))
        oid = hashlib.sha1(f"blob {size}\0".encode() + name.encode()).hexdigest()
        out: dict[str, Any] = {"type": "file", "path": name, "size": size, "oid": oid}
        if name.endswith(LFS_SUFFIXES):
            out["lfs"] = {"oid": self.sha256(name), "size": size, "pointerSize": 134}
        return out

    def etag(self, name: str) -> str:
        return self.sha256(name) if name.endswith(LFS_SUFFIXES) else self.entry(name)["oid"]


def make_handler(repo: Repo, token: str | None, log_path: str | None,
                 rate: int = 0) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: Any) -> None:  # quiet stderr; requests go to --log as JSON
            return

        def _record(self, status: int) -> None:
            if not log_path:
                return
            line = json.dumps({"method": self.command, "path": self.path, "status": status,
                               "range": self.headers.get("Range"),
                               "authorized": self.headers.get("Authorization") == f"Bearer {token}" if token else None})
            with lock, open(log_path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")

        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if "Content-Length" not in (headers or {}):
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD" and body:
                self.wfile.write(body)
            self._record(status)

        def _json(self, data: Any) -> None:
            self._send(200, json.dumps(data).encode(), {"Content-Type": "application/json"})

        def _authorized(self) -> bool:
            if token and self.headers.get("Authorization") != f"Bearer {token}":
                self._send(401, b'{"error": "Access to this model is restricted."}',
                           {"Content-Type": "application/json", "X-Error-Code": "GatedRepo"})
                return False
            return True

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
            self.do_GET()

        def do_GET(self) -> None:  # noqa: N802
            if not self._authorized():
                return
            url = urllib.parse.urlparse(self.path)
            path = urllib.parse.unquote(url.path)
            rid = re.escape(repo.repo_id)
            if re.fullmatch(rf"/api/models/{rid}(/revision/[^/]+)?", path):
                siblings = [{"rfilename": f, **({"size": e["size"], "lfs": e.get("lfs")} if "blobs" in url.query else {})}
                            for f, e in ((f, repo.entry(f)) for f in repo.files)]
                self._json({"id": repo.repo_id, "modelId": repo.repo_id, "sha": repo.sha, "private": False,
                            "gated": "manual" if token else False, "siblings": siblings})
                return
            if re.fullmatch(rf"/api/models/{rid}/tree/[^/]+(/.*)?", path):
                self._json([repo.entry(f) for f in repo.files])
                return
            match = re.fullmatch(rf"/{rid}/resolve/[^/]+/(.+)", path)
            if match and match.group(1) in repo.files:
                self._file(match.group(1))
                return
            self._send(404, b'{"error": "Entry not found"}', {"Content-Type": "application/json",
                                                              "X-Error-Code": "EntryNotFound"})

        def _file(self, name: str) -> None:
            size = os.path.getsize(repo.path(name))
            headers = {"X-Repo-Commit": repo.sha, "ETag": f'"{repo.etag(name)}"', "Accept-Ranges": "bytes",
                       "Content-Type": "application/octet-stream"}
            if name.endswith(LFS_SUFFIXES):
                headers["X-Linked-Size"] = str(size)
                headers["X-Linked-Etag"] = f'"{repo.etag(name)}"'
            start, status = 0, 200
            wanted = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
            if wanted and self.command == "GET":
                start, status = int(wanted.group(1)), 206
                headers["Content-Range"] = f"bytes {start}-{size - 1}/{size}"
            headers["Content-Length"] = str(size - start)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            if self.command == "GET":
                with open(repo.path(name), "rb") as handle:
                    handle.seek(start)
                    chunk = min(2**20, rate) if rate else 2**20
                    for block in iter(lambda: handle.read(chunk), b""):
                        self.wfile.write(block)
                        if rate:
                            time.sleep(len(block) / rate)
            self._record(status)

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo-id", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8088)
    ap.add_argument("--token-file")
    ap.add_argument("--log")
    ap.add_argument("--rate", type=int, default=0, help="bytes per second per download (0: unlimited)")
    args = ap.parse_args()
    token = None
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as handle:
            token = handle.read().strip()
    handler = make_handler(Repo(args.repo_id, args.dir), token, args.log, args.rate)
    server = ThreadingHTTPServer((args.host, args.port), handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
