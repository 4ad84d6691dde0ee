"""Runs INSIDE the parser venv: parse command lines with SGLang's and sglang-router's own parsers.

stdin:  {"serve": [[argv...], ...], "router": [[argv...], ...]}
stdout: {"sglang": version, "serve": [{"ok": bool, "error": str, "ns": {...}}], "router": [...]}
`sglang serve` builds its parser exactly like this (sglang.srt.server_args.prepare_server_args);
argparse errors are raised instead of exiting so each message can be returned.
"""
import argparse
import json
import sys


class ParseError(Exception):
    pass


def raising(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    def error(message: str) -> None:
        raise ParseError(message)
    parser.error = error  # type: ignore[method-assign]
    return parser


def serve_parser() -> argparse.ArgumentParser:
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return raising(parser)


def router_parser() -> argparse.ArgumentParser:
    from sglang_router.router_args import RouterArgs
    parser = argparse.ArgumentParser(prog="sglang_router.launch_router")
    RouterArgs.add_cli_args(parser)
    return raising(parser)


def parse_all(parser: argparse.ArgumentParser, argvs: list) -> list:
    out = []
    for argv in argvs:
        try:
            ns = parser.parse_args(argv)
            out.append({"ok": True, "error": "", "ns": json.loads(json.dumps(vars(ns), default=str))})
        except (ParseError, SystemExit) as exc:
            out.append({"ok": False, "error": str(exc), "ns": {}})
    return out


def main() -> None:
    import sglang
    request = json.load(sys.stdin)
    result = {"sglang": sglang.__version__,
              "serve": parse_all(serve_parser(), request.get("serve", [])),
              "router": parse_all(router_parser(), request.get("router", [])) if request.get("router") else []}
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
