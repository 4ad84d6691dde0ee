"""Multi-node ranks, head address and port placement, and the errors around them."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.engine import serve_args
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

BF16_PAIR = {"gpu": "h200", "quant": "bf16", "strategy": "balanced", "nodes": 2, "parsers": False}


def trio(args: list[str]) -> list[str]:
    i = args.index("--nnodes")
    return args[i:i + 6]


@pytest.mark.parametrize("rank", [0, 1])
def test_rank_and_head_follow_tp(rank: int) -> None:
    args = serve_args(BF16_PAIR, rank, "10.1.2.3")
    assert args[args.index("--tp-size") + 2:args.index("--tp-size") + 8] == [
        "--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr", "10.1.2.3:20000"]


def test_members_differ_only_in_rank() -> None:
    a, b = serve_args(BF16_PAIR, 0, "h1"), serve_args(BF16_PAIR, 1, "h1")
    assert [x for x, y in zip(a, b) if x != y] == ["0"]


def test_trio_goes_after_dp_attention_when_turned_on() -> None:
    args = serve_args({**BF16_PAIR, "dp_attention": 4}, 1, "h1")
    at = args.index("--enable-dp-attention")
    assert args[at - 3:at + 7] == ["16", "--dp-size", "4", "--enable-dp-attention", "--nnodes", "2", "--node-rank",
                                   "1", "--dist-init-addr", "h1:20000"]


def test_dist_port_override_and_ipv6_head() -> None:
    args = serve_args({**BF16_PAIR, "dist_port": 21000}, 0, "fd00::11")
    assert trio(args)[-1] == "[fd00::11]:21000"


def test_pd_multinode_uses_pd_rendezvous_ports() -> None:
    prefill = serve_args({**BF16_PAIR, "pd": {"role": "prefill"}}, 0, "h1")
    decode = serve_args({**BF16_PAIR, "pd": {"role": "decode"}}, 0, "h2")
    assert trio(prefill)[-1] == "h1:30335"
    assert trio(decode)[-1] == "h2:30435"
    assert decode[decode.index("--port") + 1] == "30100"


def test_missing_head_address_is_refused() -> None:
    with pytest.raises(RecipeError, match=r"head_address: glm-5.3 h200/bf16/balanced/2 nodes runs over 2 nodes and "
                                          r"needs the head's address; set sglang_instance_group"):
        serve_args(BF16_PAIR, 0, None)


@pytest.mark.parametrize("rank", [2, -1, "x"])
def test_rank_out_of_range_is_refused(rank: object) -> None:
    with pytest.raises(RecipeError, match=r"node_rank: .*(out of range for sglang_nodes: 2 \(ranks 0\.\.1\)|expected an integer)"):
        serve_args(BF16_PAIR, rank, "h1")


def test_single_node_accepts_only_rank_zero() -> None:
    sel = {"gpu": "h200", "quant": "fp8", "strategy": "high-throughput"}
    assert "--nnodes" not in serve_args(sel)
    with pytest.raises(RecipeError, match="ranks 0..0"):
        serve_args(sel, 1, "h1")


def test_rendezvous_port_whose_block_reaches_the_serving_port_is_refused() -> None:
    # SGLang 0.5.23, multi-node: DP attention's ZMQ ports are the rendezvous port + 1 .. + 6 (29998-30003 here)
    with pytest.raises(RecipeError, match=r"sglang_dist_port: 29997 collides with --port 30000: a multi-node server "
                                          r"takes the rendezvous port and the 6 after it \(29997-30003\)"):
        serve_args({**BF16_PAIR, "dist_port": 29997}, 0, "h1")


def test_a_multinode_server_takes_its_block_from_the_rendezvous_port() -> None:
    # no longer from --port + 233: 30235 is free for a multi-node member
    args = serve_args({**BF16_PAIR, "dist_port": 30235}, 0, "h1")
    assert args[args.index("--dist-init-addr") + 1] == "h1:30235"


def test_pd_prefill_bootstrap_port_collision_is_refused() -> None:
    with pytest.raises(RecipeError, match=r"sglang_pd.bootstrap_port: 30335 collides"):
        serve_args({**BF16_PAIR, "pd": {"role": "prefill", "bootstrap_port": 30335}}, 0, "h1")
