"""Parse an `sglang serve` argv with the SGLang installed here, with the parser `sglang serve` builds.

Run by metalserve.sglang.sglang_server with the venv's (or the image's) python before a changed
unit replaces a running one: exit 0 when SGLang's parser accepts the arguments (flag names, types,
choices; a --config file merged as `sglang serve` merges it), else SGLang's own message on stderr
and exit 2.

The parser only, as sglang.srt.server_args.prepare_server_args builds it: ServerArgs.__post_init__
is left to the launch, because some releases look for the device there (0.5.13.post1 raises "No
accelerator ... is available" on a node whose GPUs are not visible to this process), and a check
that fails for that reason would hold back every change.
"""
import argparse
import sys

from sglang.srt.server_args import ServerArgs


def parse(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    if "--config" in argv:  # as prepare_server_args does; the module moved under utils after 0.5.13.post1
        try:
            from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger
        except ImportError:
            from sglang.srt.server_args_config_parser import ConfigArgumentMerger
        argv = ConfigArgumentMerger(parser).merge_config_with_args(argv)
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    print(f"accepted: port={args.port}")
