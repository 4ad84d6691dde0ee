"""Write the table of command-line flags one SGLang release (or sglang-router release) accepts.

data/sglang/flags-<version>.yml (`sglang serve`) and data/sglang/flags-router-<version>.yml
(`python3 -m sglang_router.launch_router`) hold, per option string, what argparse needs to read a value
the way the release reads it: nargs, dest, the action's other option strings, the value's type, the
action (store, store_const with its const, append, boolean_optional...), choices, and, per dest, the
default the namespace holds when no flag is given. plugins/plugin_utils/recipe/cli.py parses command lines
with nothing but this table; tests/slow proves it reads them as the real parser does.

Two sources:
  --from-parser          import `sglang` from this interpreter and read the real argparse parser
                         (exact; what tests/slow re-checks for every shipped release);
  --router               with --from-parser: sglang-router's parser instead of `sglang serve`'s;
  --from-wheel WHEEL     read the add_argument() calls in sglang/srt/server_args.py of a published
                         wheel without importing it (for releases whose dependencies cannot be
                         installed here). Only names, nargs, dest and literal choices: no types or
                         defaults, so such a table checks names but cannot normalise values.

Usage: python tools/sglang_flag_table.py --from-parser -o data/sglang/flags-0.5.23.yml
       python tools/sglang_flag_table.py --from-parser --router -o data/sglang/flags-router-0.3.2.yml
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import math
import os
import subprocess
import sys
import zipfile
from typing import Any

import yaml

SERVER_ARGS = "sglang/srt/server_args.py"

#: argparse `type` callables -> the kind cli.py converts with (anything else: other:<name>, kept as text)
TYPE_KINDS = {
    "builtins.int": "int",
    "builtins.float": "float",
    "builtins.str": "str",
    "json.loads": "json",
    "orjson.loads": "json",
    # sglang.srt.utils.common: orjson.loads with its own error message
    "sglang.srt.utils.common.json_list_type": "json",
    # sglang.srt.utils.common: plain ints or SI (k, M, G, T) / IEC (Ki, Mi, Gi, Ti) suffixes
    "sglang.srt.utils.common.human_readable_int": "human_int",
    # sglang.srt.utils.common: '' and 'None' mean None
    "sglang.srt.utils.common.nullable_str": "nullable_str",
    # a JSON object of phase -> settings; SGLang also refuses unknown phases and keys (cli.py does not)
    "sglang.srt.model_executor.cuda_graph_config.parse_cuda_graph_config_arg": "json",
    # the text itself, refusing the retired 'tc_piecewise' (which is not among the flag's choices either)
    "sglang.srt.model_executor.cuda_graph_config.parse_cuda_graph_backend_arg": "str",
}


def nargs_of(nargs: Any, takes_value: bool) -> Any:
    """Normalise argparse nargs into what the table stores: 0 (switch), 1, or '?', '+', '*', N."""
    if not takes_value:
        return 0
    return 1 if nargs is None else nargs


def type_kind(func: Any) -> str:
    if func is None:
        return "str"
    name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"
    return TYPE_KINDS.get(name, "other:" + name)


def action_kind(action: argparse.Action) -> tuple[str, Any]:
    """(kind, const) of an action, as cli.py applies it."""
    # sglang's own deprecated actions (sglang/srt/server_args.py): they warn, then store a fixed value
    if type(action).__name__ == "DeprecatedStoreTrueAction":
        return "store_const", True
    if type(action).__name__ == "DeprecatedStoreConstAction":
        return "store_const", getattr(action, "const_value", None)
    if type(action).__name__ == "DeprecatedAliasStoreAction":
        return "store", None
    if type(action).__name__ == "DeprecatedAction":  # warns and stores nothing
        return "ignore", None
    if isinstance(action, argparse.BooleanOptionalAction):
        return "boolean_optional", None
    if isinstance(action, argparse._StoreConstAction):  # noqa: SLF001 - store_true/store_false are subclasses
        return "store_const", action.const
    if isinstance(action, argparse._AppendConstAction):  # noqa: SLF001
        return "append_const", action.const
    if isinstance(action, argparse._AppendAction):  # noqa: SLF001
        return "append", None
    if isinstance(action, argparse._CountAction):  # noqa: SLF001
        return "count", None
    if isinstance(action, argparse._StoreAction):  # noqa: SLF001
        return "store", None
    # any other custom action (sglang's LoRAPathAction): read as a store of its converted values
    return "other:" + type(action).__name__, None


def plain(value: Any) -> Any:
    """A value as the namespace shows it in JSON (tests/slow/parse_with_sglang.py: json.dumps(default=str))."""
    return json.loads(json.dumps(value, default=str))


def table_from_argparse(parser: argparse.ArgumentParser) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(flags in the parser's order, defaults per dest) of a built parser."""
    flags: dict[str, dict[str, Any]] = {}
    for action in parser._actions:  # noqa: SLF001 - argparse offers no public list
        if isinstance(action, argparse._HelpAction):  # noqa: SLF001
            continue
        kind, const = action_kind(action)
        entry: dict[str, Any] = {"nargs": nargs_of(action.nargs, action.nargs != 0)}
        longs = [o for o in action.option_strings if o.startswith("--")]
        if len(longs) > 1:
            entry["names"] = longs
        if isinstance(action.nargs, int) and action.nargs > 0:
            entry["as_list"] = True  # an explicit nargs=N keeps its values in a list, even for N = 1
        if entry["nargs"] != 0 or kind.startswith("other:"):
            entry["type"] = type_kind(action.type)
        if kind != "store":
            entry["action"] = kind
        if kind in ("store_const", "append_const"):
            entry["const"] = plain(const)
        elif action.nargs == "?":
            entry["const"] = plain(action.const)  # what a bare --flag stores
        if action.choices:
            entry["choices"] = [plain(c) for c in action.choices]
        if action.required:
            entry["required"] = True
        if "Deprecated" in type(action).__name__:
            entry["deprecated"] = True
        for opt in longs:
            flags[opt] = dict(entry, dest=action.dest)
    # the namespace with no flag given, as argparse itself fills it (first action of a dest wins, string
    # defaults converted by their type): parse nothing with `required` lifted
    for action in parser._actions:  # noqa: SLF001
        action.required = False
    defaults = {k: plain(v) for k, v in vars(parser.parse_args([])).items() if v is not None}
    return flags, defaults


def settle_choices(flags: dict[str, dict[str, Any]], router: bool) -> dict[str, dict[str, Any]]:
    """Choices in the parser's order, except where that order changes from one run to the next (sglang-router builds
    some from an unordered map): read the parser again in a fresh interpreter and sort the choices that moved."""
    cmd = [sys.executable, __file__, "--from-parser", "--choices-only"] + (["--router"] if router else [])
    again = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    out = {}
    for flag, entry in flags.items():
        if "choices" in entry and again.get(flag) != entry["choices"]:
            entry = dict(entry, choices=sorted(entry["choices"], key=str))
        out[flag] = entry
    return out


def table_from_parser(router: bool = False) -> tuple[str, str, dict[str, dict[str, Any]], dict[str, Any]]:
    if router:
        import sglang_router  # noqa: PLC0415  (only available inside the parser venv)
        from sglang_router.router_args import RouterArgs  # noqa: PLC0415

        parser = argparse.ArgumentParser(prog="sglang_router.launch_router")
        RouterArgs.add_cli_args(parser)
        return (sglang_router.__version__, "python3 -m sglang_router.launch_router",
                *table_from_argparse(parser))
    import sglang  # noqa: PLC0415  (only available inside the parser venv)
    from sglang.srt.server_args import ServerArgs  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return (sglang.__version__, "sglang serve", *table_from_argparse(parser))


SWITCH_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version",
                  "DeprecatedAction", "DeprecatedStoreTrueAction", "argparse.BooleanOptionalAction"}


def table_from_source(source: str) -> dict[str, dict[str, Any]]:
    flags: dict[str, dict[str, Any]] = {}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        opts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action = kw.get("action")
        action_name = action.value if isinstance(action, ast.Constant) else (
            ast.unparse(action) if action is not None else "store")
        takes_value = action_name not in SWITCH_ACTIONS
        nargs = ast.literal_eval(kw["nargs"]) if isinstance(kw.get("nargs"), ast.Constant) else None
        entry: dict[str, Any] = {"nargs": nargs_of(nargs, takes_value)}
        choices = kw.get("choices")
        if isinstance(choices, (ast.List, ast.Tuple)):
            try:
                entry["choices"] = [plain(c) for c in ast.literal_eval(choices)]
            except ValueError:
                pass
        if str(action_name).startswith("Deprecated"):
            entry["deprecated"] = True
        if action_name == "argparse.BooleanOptionalAction":
            opts += ["--no-" + o[2:] for o in opts if o.startswith("--")]
        dest = kw.get("dest")
        for opt in opts:
            if opt.startswith("--"):
                flags[opt] = dict(entry, dest=dest.value if isinstance(dest, ast.Constant)
                                  else opts[0][2:].replace("-", "_"))
    return flags


def version_from_wheel_name(path: str) -> str:
    return path.rsplit("/", 1)[-1].split("-")[1]


def scalar(value: Any) -> str:
    """One value in YAML flow style that yaml.safe_load reads back as the same value (JSON, except floats:
    YAML 1.1 reads 1e-05 as a string, so exponents get a mantissa with a dot, and inf/nan their YAML names)."""
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    if isinstance(value, list):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {scalar(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


ORDER = ("nargs", "as_list", "dest", "names", "type", "action", "const", "choices", "required", "deprecated")


def render_yaml(version: str, source: str, flags: dict[str, dict[str, Any]], defaults: dict[str, Any] | None,
                prog: str = "sglang serve") -> str:
    what = "sglang-router" if "router" in prog else "SGLang"
    out = io.StringIO()
    out.write("---\n")
    out.write(f"# Flags accepted by {what} {version} ({prog}), generated by tools/sglang_flag_table.py ({source}).\n")
    out.write("# Do not edit by hand: regenerate. One entry per option string, in the parser's order (argparse\n"
              "# lists an ambiguous prefix's matches in this order):\n"
              "#   nargs    0 = switch, 1 = one value, or argparse's '?', '*', '+', N (as_list: an explicit nargs=N,\n"
              "#            whose values argparse keeps in a list even for N = 1)\n"
              "#   dest     the namespace attribute it sets; names: every option string of its action, if several\n"
              "#   type     how a value is converted: int, float, str, json, human_int (1k, 1Ki), nullable_str\n"
              "#            ('' and 'None' are None), other:<function> (kept as text by cli.py)\n"
              "#   action   store when absent; store_const (sets const), append, append_const, count,\n"
              "#            boolean_optional (--x true, --no-x false), ignore (a retired flag: warns, stores nothing)\n"
              "#   choices  accepted values after conversion, in the parser's order (read with PYTHONHASHSEED=0, as a\n"
              "#            few are built from a set; sorted where the order still changes from run to run)\n")
    if defaults is not None:
        out.write("# defaults: what the namespace holds for each dest when no flag sets it (None left out).\n")
    else:
        out.write("# Read from source without importing it: no types and no defaults (names and nargs only).\n")
    out.write(f'sglang_version: "{version}"\n' if what == "SGLang" else f'router_version: "{version}"\n')
    out.write(f"source: {source}\n")
    out.write(f"prog: {prog}\n")
    out.write("flags:\n")
    for flag, entry in flags.items():
        parts = [f"{key}: {scalar(entry[key])}" for key in ORDER if key in entry]
        out.write(f'  "{flag}": {{{", ".join(parts)}}}\n')
    if defaults is not None:
        out.write("defaults:\n")
        for dest in sorted(defaults):
            out.write(f"  {dest}: {scalar(defaults[dest])}\n")
    text = out.getvalue()
    check = yaml.safe_load(text)
    assert check["flags"] == flags, "the YAML does not read back as the table"
    assert check.get("defaults") == defaults or defaults is None, "the YAML does not read back as the defaults"
    return text


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # some parsers build choices from a set: one hash seed makes their order, and so the table, reproducible
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-parser", action="store_true")
    src.add_argument("--from-wheel", metavar="WHEEL")
    ap.add_argument("--router", action="store_true", help="sglang-router's parser (with --from-parser)")
    ap.add_argument("--choices-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args(argv)
    if args.from_parser:
        version, prog, flags, defaults = table_from_parser(router=args.router)
        if args.choices_only:
            json.dump({f: e["choices"] for f, e in flags.items() if "choices" in e}, sys.stdout)
            return 0
        text = render_yaml(version, "parser", settle_choices(flags, args.router), defaults, prog)
    else:
        with zipfile.ZipFile(args.from_wheel) as whl:
            source = whl.read(SERVER_ARGS).decode()
        text = render_yaml(version_from_wheel_name(args.from_wheel), "wheel-source", table_from_source(source), None)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
