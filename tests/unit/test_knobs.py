"""Each playground knob on an NVIDIA and an AMD cell, and each of its constraints."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.engine import recipe, serve_args
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

H200_HT = {"gpu": "h200", "quant": "fp8", "strategy": "high-throughput"}
H200_LL = {"gpu": "h200", "quant": "fp8", "strategy": "low-latency"}
B300_HT = {"gpu": "b300", "quant": "fp8", "strategy": "high-throughput"}
GB300_LL = {"gpu": "gb300", "quant": "fp8", "strategy": "low-latency"}
MI355_BAL = {"gpu": "mi355x", "quant": "fp8", "strategy": "balanced"}
MI300_LL = {"gpu": "mi300x", "quant": "fp8", "strategy": "low-latency"}


def flags(args: list[str]) -> dict[str, str | None]:
    """flag -> value (None for a switch); enough for order-independent checks."""
    out: dict[str, str | None] = {}
    for i, tok in enumerate(args):
        if tok.startswith("--"):
            nxt = args[i + 1] if i + 1 < len(args) else None
            out[tok] = None if nxt is None or nxt.startswith("--") else nxt
    return out


def spec_flags(args: list[str]) -> dict[str, str | None]:
    return {k: v for k, v in flags(args).items() if k.startswith("--speculative-")}


def refuses(selection: dict, pattern: str) -> None:
    with pytest.raises(RecipeError, match=pattern):
        serve_args(selection)


# --- parsers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("base", [H200_HT, MI355_BAL], ids=["nvidia", "amd"])
def test_parsers_default_on_and_switchable(base: dict) -> None:
    assert {"--reasoning-parser": "glm45", "--tool-call-parser": "glm47"}.items() <= flags(serve_args(base)).items()
    off = flags(serve_args({**base, "parsers": False}))
    assert "--reasoning-parser" not in off and "--tool-call-parser" not in off
    only = flags(serve_args({**base, "parsers": {"reasoning": True, "tool_call": False}}))
    assert only.get("--reasoning-parser") == "glm45" and "--tool-call-parser" not in only


def test_parsers_bad_shape() -> None:
    refuses({**H200_HT, "parsers": ["glm45"]}, r"sglang_parsers: expected true/false or \{reasoning")
    refuses({**H200_HT, "parsers": {"tools": True}}, r"sglang_parsers: unknown key\(s\) tools")


# --- speculative ------------------------------------------------------------------------------

def test_preset_replaces_every_speculative_flag() -> None:
    args = serve_args({**H200_HT, "speculative": "mtp-516"})
    assert spec_flags(args) == {"--speculative-algorithm": "EAGLE", "--speculative-num-steps": "5",
                                "--speculative-eagle-topk": "1", "--speculative-num-draft-tokens": "6"}
    # the group stays where the cell had it: right after the MoE backend
    at = args.index("--speculative-algorithm")
    assert args[at - 2:at] == ["--moe-a2a-backend", "deepep"]


def test_speculative_off_and_added_to_a_cell_without_it() -> None:
    assert spec_flags(serve_args({**H200_HT, "speculative": "off"})) == {}
    args = serve_args({**B300_HT, "speculative": "mtp-213"})
    assert spec_flags(args)["--speculative-num-draft-tokens"] == "3"
    assert args.index("--speculative-algorithm") == args.index("--moe-a2a-backend") + 2


def test_dflash2_preset() -> None:
    rec = recipe({**H200_LL, "speculative": "dflash2"})
    assert spec_flags(rec["args"]) == {"--speculative-algorithm": "DFLASH",
                                       "--speculative-draft-model-path": "incoai/GLM-5.3-DFlash2",
                                       "--speculative-draft-attention-backend": "fa4"}
    assert any("CC BY-NC-ND 4.0" in w for w in rec["warnings"])
    local = serve_args({**H200_LL, "speculative": "dflash2", "draft_model_path": "/models/dflash2"})
    assert flags(local)["--speculative-draft-model-path"] == "/models/dflash2"


def test_dflash_with_dp_attention_is_refused() -> None:
    refuses({**H200_HT, "speculative": "dflash2"},
            r"sglang_speculative: dflash2 rejects DP-attention, which the high-throughput cell turns on; set "
            r"sglang_dp_attention: off as well")
    assert spec_flags(serve_args({**H200_HT, "speculative": "dflash2", "dp_attention": "off"}))


def test_dflash_needs_a_newer_release() -> None:
    refuses({**H200_LL, "speculative": "dflash2", "sglang_version": "0.5.18"},
            r"sglang_speculative: dflash2 needs SGLang >= 0.5.19; the command targets 0.5.18")


@pytest.mark.parametrize("preset", ["mtp-516", "mtp-112", "mtp-213", "dflash2"])
def test_mtp_and_dflash_refused_on_amd(preset: str) -> None:
    refuses({**MI355_BAL, "speculative": preset},
            rf"sglang_speculative: {preset} is not available on mi355x \(amd\).*use sglang_speculative: off")


def test_unknown_preset_and_stray_draft_path() -> None:
    refuses({**H200_HT, "speculative": "eagle3"},
            r"sglang_speculative: 'eagle3' is not a preset of glm-5.3; presets: inherit, off, mtp-516")
    refuses({**H200_HT, "draft_model_path": "/x"}, r"sglang_draft_model_path: only a draft-model preset uses it")


def test_speculative_cap_warning() -> None:
    # the low-latency cell has MTP and no --max-running-requests
    assert any("caps running requests at 48" in w for w in recipe(H200_LL)["warnings"])
    assert not any("caps running" in w for w in recipe(H200_HT)["warnings"])
    assert not any("caps running" in w
                   for w in recipe({**H200_LL, "extra_args": {"--max-running-requests": 64}})["warnings"])


# --- DP attention, MoE, EP ----------------------------------------------------------------------

def test_dp_attention_off_keeps_deepep_chunked_prefill_and_max_running() -> None:
    f = flags(serve_args({**H200_HT, "dp_attention": "off"}))
    assert "--dp-size" not in f and "--enable-dp-attention" not in f
    assert f["--moe-a2a-backend"] == "deepep" and f["--chunked-prefill-size"] == "32768"
    assert f["--max-running-requests"] == "256"
    # YAML's bare `off` arrives as False
    assert "--dp-size" not in flags(serve_args({**H200_HT, "dp_attention": False}))


@pytest.mark.parametrize("base", [H200_LL, MI300_LL], ids=["nvidia", "amd"])
def test_dp_attention_size_added(base: dict) -> None:
    args = serve_args({**base, "dp_attention": 4})
    at = args.index("--tp-size")
    assert args[at:at + 5] == ["--tp-size", "8", "--dp-size", "4", "--enable-dp-attention"]


def test_dp_attention_size_must_divide_tp() -> None:
    refuses({**GB300_LL, "dp_attention": 3}, r"sglang_dp_attention: 3 must divide the TP size 4 .* use one of 2, 4")
    refuses({**H200_HT, "dp_attention": "most"}, r"sglang_dp_attention: 'most' is not inherit, off or a size")


def test_deepep_and_ep() -> None:
    f = flags(serve_args({**H200_LL, "moe_a2a": "deepep", "ep": 8}))
    assert f["--moe-a2a-backend"] == "deepep" and f["--ep-size"] == "8"


def test_deepep_is_refused_on_amd() -> None:
    """DeepEP's kernels are NVSHMEM/IBGDA on Hopper and Blackwell; SGLang's AMD all-to-all is mori."""
    refuses({**MI355_BAL, "moe_a2a": "deepep"},
            r"^sglang_moe_a2a: deepep \(DeepEP\) runs on NVIDIA GPUs only \(data/sglang/vendors\.yml\); mi355x is AMD\. "
            r"Drop sglang_moe_a2a for these hosts$")


def test_ep_must_divide_tp() -> None:
    refuses({**H200_HT, "ep": 3}, r"sglang_ep: 3 must divide the TP size 8")


# --- context parallelism ------------------------------------------------------------------------

def test_context_parallel_on_a_single_node_nvidia_cell() -> None:
    args = serve_args({**H200_LL, "context_parallel": {"size": 8}})
    at = args.index("--attn-cp-size")
    assert args[at:at + 5] == ["--attn-cp-size", "8", "--enable-prefill-cp", "--cp-strategy", "interleave"]
    assert args[at - 2:at] == ["--tp-size", "8"]


def test_context_parallel_constraints() -> None:
    refuses({**H200_HT, "context_parallel": {"size": 8}},
            r"interleave CP fails SGLang's dp_size == 1 check with DP-attention.*sglang_dp_attention: off")
    assert "--enable-prefill-cp" in serve_args({**H200_HT, "dp_attention": "off", "context_parallel": {}})
    refuses({"gpu": "h200", "quant": "bf16", "strategy": "balanced", "nodes": 2, "context_parallel": {"size": 16}},
            r"prefill context parallelism is single-node only")
    refuses({**MI355_BAL, "context_parallel": {"size": 8}}, r"prefill CP is CUDA-only upstream; mi355x is AMD")
    refuses({**H200_LL, "context_parallel": {"size": 4}}, r"size: 4 must equal TP/DP = 8/1 = 8")
    refuses({**H200_LL, "context_parallel": {"strategy": "zigzag"}}, r"zigzag prefill CP is temporarily unavailable")
    refuses({**H200_LL, "context_parallel": {"degree": 8}}, r"unknown key\(s\) degree")


def test_context_parallel_needs_a_release_with_prefill_cp() -> None:
    refuses({**H200_LL, "context_parallel": {}, "sglang_version": "0.5.13.post1"},
            r"sglang_context_parallel: prefill context parallelism \(--enable-prefill-cp\) needs SGLang >= 0.5.14; "
            r"the command targets 0.5.13.post1 \(sglang_version\)")


def test_layer_split_only_on_a_mooncake_prefill_worker() -> None:
    cp = {"size": 8, "layer_split": True}
    args = serve_args({**H200_LL, "context_parallel": cp, "pd": {"role": "prefill"}})
    assert "--enable-dsa-cache-layer-split" in args
    refuses({**H200_LL, "context_parallel": cp},
            r"LayerSplit runs only on a PD prefill worker with the mooncake backend")
    refuses({**H200_LL, "context_parallel": cp, "pd": {"role": "prefill", "transfer_backend": "nixl"}},
            r"LayerSplit runs only on a PD prefill worker")
    refuses({**H200_LL, "context_parallel": cp, "pd": {"role": "decode"}}, r"LayerSplit runs only")
    refuses({**H200_LL, "context_parallel": cp, "pd": {"role": "prefill"}, "sglang_version": "0.5.15.post1"},
            r"DSA KV-cache LayerSplit \(--enable-dsa-cache-layer-split\) needs SGLang >= 0.5.16")


# --- HiCache, FP8 KV ------------------------------------------------------------------------------

@pytest.mark.parametrize("base", [H200_HT, MI355_BAL], ids=["nvidia", "amd"])
def test_hicache(base: dict) -> None:
    f = flags(serve_args({**base, "hicache": {"enabled": True}}))
    assert {"--enable-hierarchical-cache": None, "--hicache-ratio": "2", "--hicache-size": "0",
            "--hicache-write-policy": "write_through"}.items() <= f.items()
    assert "--hicache-storage-backend" not in f
    f = flags(serve_args({**base, "hicache": {"ratio": 3, "write_policy": "write_back", "storage_backend": "file"}}))
    assert {"--hicache-ratio": "3", "--hicache-write-policy": "write_back", "--hicache-mem-layout": "page_first_direct",
            "--hicache-io-backend": "direct", "--hicache-storage-backend": "file",
            "--hicache-storage-prefetch-policy": "wait_complete"}.items() <= f.items()
    assert "--enable-hierarchical-cache" not in serve_args({**base, "hicache": {"enabled": False}})


def test_hicache_errors() -> None:
    refuses({**H200_HT, "hicache": ["enabled"]}, r"sglang_hicache: expected a mapping")
    refuses({**H200_HT, "hicache": {"write_policy": "lazy"}}, r"write_policy: 'lazy' is not one of write_back")
    refuses({**H200_HT, "hicache": {"storage_backend": "s3"}}, r"storage_backend: 's3' is not one of file, mooncake")
    refuses({**H200_HT, "hicache": {"ratio": -1}}, r"sglang_hicache.ratio: -1 must be a positive number")


def test_hopper_fp8_kv_cache() -> None:
    f = flags(serve_args({**H200_HT, "kv_cache_fp8": True}))
    assert {"--kv-cache-dtype": "fp8_e4m3", "--dsa-prefill-backend": "flashmla_sparse_q8",
            "--dsa-decode-backend": "flashmla_kv"}.items() <= f.items()
    refuses({**B300_HT, "kv_cache_fp8": True}, r"for Hopper \(H200\); b300 is blackwell and already uses an fp8_e4m3")
    refuses({**MI355_BAL, "kv_cache_fp8": True}, r"for Hopper \(H200\); mi355x is cdna4")


# --- PD -------------------------------------------------------------------------------------------

def test_pd_roles_ports_and_backend() -> None:
    p = recipe({**H200_HT, "pd": {"role": "prefill"}})
    d = recipe({**H200_HT, "pd": {"role": "decode", "transfer_backend": "nixl", "ib_device": "mlx5_3"}})
    fp, fd = flags(p["args"]), flags(d["args"])
    assert fp["--disaggregation-mode"] == "prefill" and fp["--port"] == "30000"
    assert fp["--disaggregation-transfer-backend"] == "mooncake" and "--disaggregation-ib-device" not in fp
    assert fd["--disaggregation-mode"] == "decode" and fd["--port"] == "30100"
    assert fd["--disaggregation-transfer-backend"] == "nixl" and fd["--disaggregation-ib-device"] == "mlx5_3"
    assert p["ports"] == [30000, 30233, 30234, 30235, 30236, 30237, 30238]
    custom = flags(serve_args({**H200_HT, "pd": {"role": "prefill", "bootstrap_port": 9000}}))
    assert custom["--disaggregation-bootstrap-port"] == "9000"
    explicit = flags(serve_args({**H200_HT, "port": 31000, "pd": {"role": "decode"}}))
    assert explicit["--port"] == "31000"


def test_gb300_mooncake_env() -> None:
    env = recipe({**GB300_LL, "pd": {"role": "decode"}})["env"]
    assert env == {"NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1", "SGLANG_MOONCAKE_CUSTOM_MEM_POOL": "True",
                   "MC_FORCE_MNNVL": "1"}
    assert recipe({**GB300_LL, "pd": {"role": "decode", "transfer_backend": "nixl"}})["env"] == {}
    assert recipe({**H200_HT, "pd": {"role": "decode"}})["env"] == {}


def test_pd_errors() -> None:
    refuses({**H200_HT, "pd": {"role": "both"}}, r"sglang_pd.role: 'both' is not one of prefill, decode")
    refuses({**H200_HT, "pd": {"role": "prefill", "transfer_backend": "tcp"}}, r"transfer_backend: 'tcp' is not one")
    refuses({**H200_HT, "pd": "prefill"}, r"sglang_pd: expected a mapping \(key: value\), got str 'prefill'")
    refuses({**H200_HT, "pd": {"role": "prefill", "bootstrap_port": "x"}},
            r"sglang_pd.bootstrap_port: expected an integer, got str 'x'")
    refuses({**H200_HT, "pd": {"role": "prefill", "bootstrap_port": 70000}}, r"bootstrap_port: 70000 is not a TCP port")


def test_nested_values_mean_what_they_mean_at_the_top() -> None:
    """One coercion at every depth: a quoted port inside sglang_pd is a port as sglang_port: "30400" is; "false"
    inside sglang_hicache turns it off as sglang_kv_cache_fp8: "false" would; a quoted size is the size."""
    quoted = flags(serve_args({**H200_HT, "pd": {"role": "prefill", "bootstrap_port": "30444"}}))
    assert quoted["--disaggregation-bootstrap-port"] == "30444"
    assert "--enable-hierarchical-cache" not in flags(serve_args({**H200_HT, "hicache": {"enabled": "false"}}))
    assert "--enable-hierarchical-cache" in flags(serve_args({**H200_HT, "hicache": {"enabled": "yes"}}))
    cp = {"gpu": "h200", "quant": "fp8", "strategy": "low-latency", "dp_attention": "off"}
    assert flags(serve_args({**cp, "context_parallel": {"size": "8"}}))["--attn-cp-size"] == "8"
    assert "--reasoning-parser" not in flags(serve_args({**H200_HT, "parsers": {"reasoning": "no"}}))


# --- extra / remove args, env, model path --------------------------------------------------------

def test_extra_args_dict_and_list_forms() -> None:
    extra = {"--max-running-requests": 384, "--enable-mixed-chunk": True, "--chunked-prefill-size": False, "tp": 8}
    f = flags(serve_args({**H200_HT, "extra_args": extra}))
    assert f["--max-running-requests"] == "384" and "--enable-mixed-chunk" in f and "--chunked-prefill-size" not in f
    assert f["--tp-size"] == "8"
    args = serve_args({**H200_HT, "extra_args": ["--dist-timeout 3600", "--enable-mixed-chunk", "--log-level=debug"]})
    assert flags(args)["--dist-timeout"] == "3600" and flags(args)["--log-level"] == "debug"
    assert args[-4:] == ["--host", "0.0.0.0", "--port", "30000"]


@pytest.mark.parametrize("extra", [{"--tensor-parallel-size": 8}, {"--tp": 8}, ["--tp=8"], ["--tensor-parallel=8"]])
def test_another_spelling_of_a_flag_replaces_it_where_it_stands(extra: object) -> None:
    """SGLang 0.5.23 reads --tensor-parallel-size, the prefix --tp and --tensor-parallel as --tp-size (its parser:
    data/sglang/flags-0.5.23.yml); the edit replaces the cell's --tp-size instead of adding a second spelling."""
    args = serve_args({**H200_LL, "extra_args": extra})
    assert args.count("--tp-size") == 1 and "--tensor-parallel-size" not in args
    assert args[args.index("--tp-size") + 1] == "8" and args[:4] == ["--model-path", "zai-org/GLM-5.3", "--tp-size", "8"]


def test_removing_by_another_spelling_removes_the_flag() -> None:
    f = flags(serve_args({**H200_HT, "remove_args": ["--max-running", "chunked-prefill"]}))
    assert "--max-running-requests" not in f and "--chunked-prefill-size" not in f


@pytest.mark.parametrize("variable,given,expect", [
    ("extra_args", {"--nccl-init-addr": "10.0.0.9:20000"},
     r"^sglang_extra_args: --nccl-init-addr \(to SGLang 0\.5\.23 the same as --dist-init-addr\) 10\.0\.0\.9:20000 "
     r"contradicts sglang_instance_group / sglang_dist_address / sglang_dist_port, which gives the command no "
     r"--dist-init-addr; change sglang_instance_group / sglang_dist_address / sglang_dist_port instead$"),
    ("extra_args", ["--dist-init=10.0.0.9:20000"],
     r"--dist-init \(to SGLang 0\.5\.23 the same as --dist-init-addr\) 10\.0\.0\.9:20000 contradicts"),
    ("extra_args", {"--model": "/srv/glm"}, r"--model \(to SGLang 0\.5\.23 the same as --model-path\) /srv/glm contradicts "
                                            r"sglang_model_path, which gives the command --model-path zai-org/GLM-5\.3; "
                                            r"change sglang_model_path instead"),
    ("extra_args", {"--data-parallel-size": 4}, r"--data-parallel-size \(to SGLang 0\.5\.23 the same as --dp-size\) 4 "
                                                r"contradicts sglang_dp_attention, which gives the command --dp-size 8"),
    ("extra_args", {"--ep": 4}, r"--ep \(to SGLang 0\.5\.23 the same as --ep-size\) 4 contradicts sglang_ep"),
    ("extra_args", {"--disaggregation-bootstrap": 9100}, r"change sglang_pd\.bootstrap_port instead"),
    ("extra_args", {"--port": 31000}, r"^sglang_extra_args: --port 31000 contradicts sglang_port, which gives the "
                                      r"command --port 30000; change sglang_port instead$"),
    ("remove_args", ["--enable-metrics"], r"^sglang_remove_args: removing --enable-metrics contradicts sglang_metrics, "
                                          r"which sets --enable-metrics; change sglang_metrics instead$"),
    ("remove_args", ["--enable-dp-attention"], r"^sglang_remove_args: removing --enable-dp-attention contradicts "
                                               r"sglang_dp_attention, which sets --enable-dp-attention"),
    ("extra_args", {"--admin-api": "x"}, r"^sglang_extra_args: --admin-api \(to SGLang 0\.5\.23 the same as "
                                         r"--admin-api-key\) would put a secret on the command line"),
])
def test_owned_flags_that_contradict_are_refused_under_every_spelling(variable: str, given: object, expect: str) -> None:
    refuses({**H200_HT, variable: given}, expect)


@pytest.mark.parametrize("base,variable,given,owner", [
    (H200_HT, "extra_args", {"--enable-metrics": True}, "sglang_metrics"),
    (H200_HT, "extra_args", ["--port 30000"], "sglang_port"),
    (H200_HT, "extra_args", {"--port": "30000", "--host": "0.0.0.0"}, "sglang_host"),
    (H200_HT, "extra_args", {"--data-parallel-size": 8, "--enable-dp-attention": True}, "sglang_dp_attention"),
    (H200_HT, "extra_args", {"--model": "zai-org/GLM-5.3"}, "sglang_model_path"),
    ({**H200_HT, "model_path": "/nvme/glm"}, "extra_args", {"--model-path": "/nvme/glm"}, "sglang_model_path"),
    (H200_LL, "remove_args", ["--enable-dp-attention"], "sglang_dp_attention"),
    ({**H200_HT, "metrics": False}, "remove_args", ["--enable-metrics"], "sglang_metrics"),
])
def test_owned_flags_that_agree_are_accepted_with_a_warning(base: dict, variable: str, given: object,
                                                            owner: str) -> None:
    """Agreement is not a mistake: the command is the one the collection writes without the flag, and a warning
    names the variable that sets it."""
    assert serve_args({**base, variable: given}) == serve_args(base)
    warned = [w for w in recipe({**base, variable: given})["warnings"] if w.startswith(f"sglang_{variable}:")]
    assert warned and any(owner in w for w in warned), warned


def test_every_contradiction_of_one_host_is_named_at_once() -> None:
    with pytest.raises(RecipeError) as caught:
        serve_args({**H200_HT, "extra_args": {"--port": 31000, "--enable-metrics": True, "--max-runing-requests": 8},
                    "metrics": False, "dp_attention": 3})
    text = str(caught.value)
    for expect in ("sglang_dp_attention: 3 must divide", "--max-runing-requests; did you mean",
                   "--port 31000 contradicts sglang_port", "--enable-metrics contradicts sglang_metrics"):
        assert expect in text, text


def test_an_ambiguous_prefix_is_refused_as_the_parser_refuses_it() -> None:
    refuses({**H200_HT, "extra_args": {"--dist": 60}},
            r"^sglang_extra_args: --dist is ambiguous to SGLang 0\.5\.23 \(ambiguous option: --dist could match "
            r"--dist-timeout, --dist-init-addr\); write the whole flag name$")


@pytest.mark.parametrize("extra,expect", [
    ({"--max-running-requests": "1e3"}, r"^sglang_extra_args: SGLang 0\.5\.23's parser refuses the command: argument "
                                        r"--max-running-requests: invalid int value: '1e3'$"),
    ({"--mem-fraction-static": "most"}, r"invalid float value: 'most'"),
    ({"--tp-size": "8.0"}, r"argument --tp-size/--tensor-parallel-size: invalid int value: '8\.0'"),
])
def test_numbers_are_judged_as_sglang_parses_them(extra: dict, expect: str) -> None:
    refuses({**H200_LL, "extra_args": extra}, expect)


def test_numbers_sglang_accepts_pass() -> None:
    """int('1_000') and int(' +8') are what argparse's int accepts; the command keeps the text as written."""
    assert flags(serve_args({**H200_LL, "extra_args": {"--max-running-requests": "1_000"}}))[
        "--max-running-requests"] == "1_000"


def test_dp_size_without_dp_attention_is_judged_on_the_final_namespace() -> None:
    site = {"id": "glm-5.3", "cells": [{"gpu": "h200", "quant": "fp8", "strategy": "balanced", "nodes": 1,
                                        "flags": {"--tp-size": 8, "--data-parallel-size": 2}}]}
    refuses({"gpu": "h200", "strategy": "balanced", "recipes": [site]},
            r"^sglang_recipes \(cell h200/fp8/balanced\): --dp-size 2 without DP attention runs 2 replicas of TP 8 "
            r"\(16 GPUs\) in glm-5\.3 h200/fp8/balanced/1 node, not the 8 the placement gives it; use sglang_dp_attention")


def test_a_tp_size_per_node_on_a_two_node_instance_is_refused() -> None:
    refuses({"gpu": "h200", "quant": "bf16", "strategy": "balanced", "nodes": 2,
             "extra_args": {"--tensor-parallel-size": 8}},
            r"^sglang_extra_args \(--tensor-parallel-size 8\): --tp-size 8 over 2 nodes is 4 GPUs per node, but glm-5\.3 h200/bf16/balanced/2 nodes "
            r"spans 2 h200 nodes of 8 GPUs: the TP size counts every GPU of the instance, across its nodes \(2 x 8 = 16\)\. "
            r"Set --tp-size 16, or change sglang_nodes$")


def test_site_recipe_cells_cannot_set_managed_flags_or_secrets() -> None:
    def cell(flags: dict) -> dict:
        return {"id": "glm-5.3", "cells": [{"gpu": "h200", "quant": "fp8", "strategy": "balanced", "nodes": 1,
                                            "flags": {"--tp-size": 8, **flags}}]}
    refuses({"gpu": "h200", "strategy": "balanced", "recipes": [cell({"--port": 31000})]},
            r"^sglang_recipes \(cell h200/fp8/balanced\): --port 31000 contradicts sglang_port, which gives the command "
            r"--port 30000; change sglang_port instead$")
    agreeing = recipe({"gpu": "h200", "strategy": "balanced", "recipes": [cell({"--port": 30000})]})
    assert agreeing["args"].count("--port") == 1 and any("agrees with" in w for w in agreeing["warnings"])
    refuses({"gpu": "h200", "strategy": "balanced", "recipes": [cell({"--api-key": "x"})]},
            r"^sglang_recipes \(cell h200/fp8/balanced\): --api-key would put a secret on the command line")
    refuses({"gpu": "h200", "strategy": "balanced",
             "recipes": [cell({"--served-model-name": "hf_" + "a" * 34})]},
            r"--served-model-name holds a Hugging Face token")
    refuses({"gpu": "h200", "strategy": "balanced",
             "recipes": [cell({"--json-model-override-args": '{"x": "hf_' + "a" * 34 + '"}'})]},
            r"^sglang_recipes \(cell h200/fp8/balanced\): --json-model-override-args holds a Hugging Face token \(hf_\.\.\.\); "
            r"secrets never go on the command line")


@pytest.mark.parametrize("env,expect", [
    ({"HF_TOKEN": "x"}, r"^sglang_env: HF_TOKEN looks like a secret; sglang_env is rendered into the plan"),
    ({"MC_METADATA": "redis://ops:hunter2@10.0.0.5:6379"},
     r"^sglang_env\.MC_METADATA holds a URL with a password \(user:password@\); secrets never go"),
])
def test_secrets_in_sglang_env_are_refused(env: dict, expect: str) -> None:
    refuses({**H200_HT, "env": env}, expect)


def test_tokens_count_is_not_a_token() -> None:
    assert recipe({**H200_HT, "env": {"SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK": 256, "HF_TOKEN_PATH": "/x"}})


def test_extra_args_are_checked_against_the_target_release() -> None:
    refuses({**H200_HT, "extra_args": {"--max-runing-requests": 10}},
            r"sglang_extra_args: SGLang 0.5.23 has no flag --max-runing-requests; did you mean --max-running-requests")
    refuses({**H200_HT, "extra_args": {"--enable-mixed-chunk": "yes"}},
            r"sglang_extra_args: --enable-mixed-chunk is a switch in SGLang 0.5.23")
    refuses({**H200_HT, "extra_args": {"--attention-backend": "fa99"}},
            r"sglang_extra_args: --attention-backend 'fa99' is not accepted by SGLang 0.5.23")
    refuses({**H200_HT, "extra_args": ["--dist-timeout", "1", "2"]}, r"--dist-timeout takes one value")
    refuses({**H200_HT, "extra_args": ["3600"]}, r"'3600' comes before any --flag")
    refuses({**H200_HT, "extra_args": "--enable-mixed-chunk"}, r"sglang_extra_args: expected a mapping")


@pytest.mark.parametrize("flag,value,variable", [("--port", "31000", "sglang_port"),
                                                 ("--model-path", "/srv/x", "sglang_model_path"),
                                                 ("--node-rank", "1", "sglang_instance_group"),
                                                 ("--host", "10.9.9.9", "sglang_host")])
def test_extra_args_cannot_take_over_managed_flags(flag: str, value: str, variable: str) -> None:
    refuses({**H200_HT, "extra_args": {flag: value}}, rf"{flag} {value} contradicts {variable}.*; change {variable}.* instead")
    refuses({**H200_HT, "extra_args": {flag: "not-a-number"}} if flag in ("--port", "--node-rank") else
            {**H200_HT, "extra_args": {flag: value}}, rf"^sglang_extra_args: .*{flag}")


def test_secrets_never_go_on_the_command_line() -> None:
    refuses({**H200_HT, "extra_args": {"--api-key": "s3cr3t"}}, r"--api-key would put a secret on the command line")


def test_remove_args() -> None:
    f = flags(serve_args({**H200_HT, "remove_args": ["--chunked-prefill-size", "max-running-requests"]}))
    assert "--chunked-prefill-size" not in f and "--max-running-requests" not in f
    rec = recipe({**H200_HT, "remove_args": ["--cuda-graph-max-bs"]})
    assert any("--cuda-graph-max-bs is not in the command" in w for w in rec["warnings"])
    refuses({**H200_HT, "remove_args": ["--host"]}, r"sglang_remove_args: removing --host contradicts sglang_host")


def test_env_merges_over_cell_env() -> None:
    # the one cell with an env of its own is GB300 high-throughput of cookbook revision 03d5035a
    sel = {"gpu": "gb300", "quant": "fp8", "strategy": "high-throughput", "cookbook_revision": "03d5035a"}
    assert recipe(sel)["env"] == {"SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "512"}
    env = recipe({**sel, "env": {"SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK": 256, "NCCL_DEBUG": "WARN"}})["env"]
    assert env == {"SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "256", "NCCL_DEBUG": "WARN"}


def test_model_path_keeps_the_public_name() -> None:
    rec = recipe({**H200_HT, "model_path": "/nvme/glm"})
    assert rec["args"][:4] == ["--model-path", "/nvme/glm", "--served-model-name", "zai-org/GLM-5.3"]
    assert rec["served_model_name"] == "zai-org/GLM-5.3"
    named = recipe({**H200_HT, "model_path": "/nvme/glm", "served_model_name": "glm-5.3"})
    assert named["args"][2:4] == ["--served-model-name", "glm-5.3"]


def test_pd_on_amd_renders_for_the_rocm_release() -> None:
    rec = recipe({**MI355_BAL, "pd": {"role": "decode"}})
    f = flags(rec["args"])
    assert (f["--disaggregation-mode"], f["--port"], rec["sglang_version"]) == ("decode", "30100", "0.5.13.post1")
    assert f["--cuda-graph-max-bs"] == "128" and rec["env"] == {}


@pytest.mark.parametrize("base", [H200_HT, MI355_BAL], ids=["nvidia", "amd"])
def test_model_path_on_both_vendors(base: dict) -> None:
    assert serve_args({**base, "model_path": "/m"})[:4] == ["--model-path", "/m", "--served-model-name",
                                                            "zai-org/GLM-5.3"]
