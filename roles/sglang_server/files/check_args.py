"""Parse an `sglang serve` argv with the SGLang installed here, exactly as `sglang serve` does.

Run by metalserve.sglang.sglang_server with the venv's (or the image's) python before a changed
unit replaces a running one: exit 0 when SGLang accepts the arguments, else SGLang's own message
on stderr and exit 2. Needs no GPU and no model (device and model checks come later, at launch).
"""
import sys

from sglang.srt.server_args import prepare_server_args

if __name__ == "__main__":
    args = prepare_server_args(sys.argv[1:])
    print(f"accepted: tp_size={args.tp_size} port={args.port}")
