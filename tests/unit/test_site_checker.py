"""The site checker (checks/site.py) on trees written by hand: the files nodes would get, including trees the planner
cannot produce today (GPU masks, two servers on one box, copied rendezvous addresses, edited unit files).

Every tree here is literal text typed in this file, never rendered by the planner; what a message must say comes from
the situation (an operator's reading of the files), not from the checker. test_checker_sites.py checks the other
direction: what the planner renders for the shipped inventories passes.
"""
from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import site as checker
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.readers import published
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.site import check_site

UNITS = "/etc/systemd/system/"


def unit(exec_start: str, *, env_file: str = "", post: str = "", environment: str = "") -> str:
    """A systemd service unit around hand-written Exec lines (continuation lines as typed)."""
    lines = ["# written by hand for a test", "[Unit]", "Description=test", "", "[Service]", "Type=exec"]
    if env_file:
        lines.append(f"EnvironmentFile={env_file}")
    if environment:
        lines.append(f"Environment={environment}")
    lines.append(f"ExecStart={exec_start}")
    if post:
        lines.append(f"ExecStartPost={post}")
    lines += ["Restart=on-failure", "", "[Install]", "WantedBy=multi-user.target", ""]
    return "\n".join(lines)


PROBE = "/usr/bin/python3 /usr/local/lib/metalserve/wait_healthy.py --url http://127.0.0.1:{port}/health --pid $MAINPID"

PREFILL = unit(
    "/usr/bin/docker run --rm --name sglang-glm-prefill --env-file /etc/sglang/glm-prefill.env --gpus all \\\n"
    "    --shm-size 32g --ipc=host --network=host --device /dev/infiniband --cap-add IPC_LOCK \\\n"
    "    -v /models/glm:/models/glm:ro lmsysorg/sglang:v0.5.23-cu129 sglang serve \\\n"
    "    --model-path /models/glm \\\n    --served-model-name zai-org/GLM-5.3 \\\n    --tp-size 8 \\\n"
    "    --disaggregation-mode prefill \\\n    --disaggregation-transfer-backend mooncake \\\n"
    "    --host 0.0.0.0 \\\n    --port 30000",
    env_file="/etc/sglang/glm-prefill.env", post=PROBE.format(port=30000))
DECODE = (PREFILL.replace("prefill", "decode").replace("--port 30000", "--port 30100")
          .replace("127.0.0.1:30000", "127.0.0.1:30100"))
ROUTER = unit(
    "/opt/sglang/venvs/0.5.23/bin/python -m sglang_router.launch_router --pd-disaggregation "
    "--prefill http://10.0.0.1:30000 --decode http://10.0.0.2:30100 --host 0.0.0.0 --port 8000 "
    "--prometheus-host 0.0.0.0 --prometheus-port 29000 --policy cache_aware",
    post=PROBE.format(port=8000))


def member(rank: int, head: str = "10.0.1.1") -> str:
    return unit(
        "/opt/sglang/venvs/0.5.23/bin/sglang serve --model-path zai-org/GLM-5.3-BF16 --tp-size 16 --nnodes 2 "
        f"--node-rank {rank} --dist-init-addr {head}:20000 --host 0.0.0.0 --port 30000",
        env_file="/etc/sglang/pair.env", post=PROBE.format(port=30000) if rank == 0 else "")


FIREWALL = """table inet metalserve_sglang
delete table inet metalserve_sglang
table inet metalserve_sglang {
  set members_v4 {
    type ipv4_addr
    elements = { 10.0.1.1, 10.0.1.2 }
  }
  chain input {
    type filter hook input priority -5; policy accept;
    iifname "lo" accept
    meta nfproto ipv4 tcp dport { 20000, 20001, 20002, 20003, 20004, 20005, 20006 } ip saddr != @members_v4 drop
    meta nfproto ipv6 tcp dport { 20000, 20001, 20002, 20003, 20004, 20005, 20006 } drop
  }
}
"""
AMD = unit(
    "/usr/bin/docker run --rm --name sglang-glm --env-file /etc/sglang/glm.env --device=/dev/kfd --device=/dev/dri "
    "--group-add video --ipc=host -p 30000:30000 lmsysorg/sglang-rocm:v0.5.13.post1-rocm720-mi35x-20260618 "
    "sglang serve --model-path zai-org/GLM-5.3 --tp-size 8 --dsa-prefill-backend tilelang --cuda-graph-max-bs 128 "
    "--host 0.0.0.0 --port 30000", env_file="/etc/sglang/glm.env", post=PROBE.format(port=30000))


def h200(machine: str, files: dict[str, str], **more: Any) -> dict[str, Any]:
    return {"machine": machine, "gpu": "h200", "vendor": "nvidia", "gpus_per_node": 8, "files": files,
            "modes": {p: "0600" for p in files if p.endswith(".env")}, **more}


def tree() -> dict[str, dict[str, Any]]:
    """A small site that is right: a PD pair behind a router, a TP16 pair with its firewall, an MI355X server."""
    return {
        "p1": h200("10.0.0.1", {UNITS + "sglang-glm-prefill.service": PREFILL,
                                "/etc/sglang/glm-prefill.env": "# env\nMC_FORCE_MNNVL=1\n"}),
        "d1": h200("10.0.0.2", {UNITS + "sglang-glm-decode.service": DECODE, "/etc/sglang/glm-decode.env": "# env\n"}),
        "r1": {"machine": "10.0.0.9", "gpu": None, "vendor": None, "gpus_per_node": None,
               "files": {UNITS + "sglang-router.service": ROUTER}},
        "m1": h200("10.0.1.1", {UNITS + "sglang-pair.service": member(0), "/etc/sglang/pair.env": "NCCL_IB_GID_INDEX=3\n",
                                "/etc/metalserve/sglang-firewall.nft": FIREWALL}),
        "m2": h200("10.0.1.2", {UNITS + "sglang-pair.service": member(1), "/etc/sglang/pair.env": "NCCL_IB_GID_INDEX=3\n",
                                "/etc/metalserve/sglang-firewall.nft": FIREWALL}),
        "a1": {"machine": "10.0.2.1", "gpu": "mi355x", "vendor": "amd", "gpus_per_node": 8,
               "files": {UNITS + "sglang-glm.service": AMD, "/etc/sglang/glm.env": "# env\n"},
               "modes": {"/etc/sglang/glm.env": "0600"}},
    }


def problems(nodes: dict[str, Any], host: str | None = None) -> list[str]:
    found = check_site(nodes)
    return [m for h, m in found if host is None or h == host]


def refused(nodes: dict[str, Any], host: str, pattern: str) -> None:
    mine = problems(nodes, host)
    assert any(re.search(pattern, m) for m in mine), f"{host}: {mine or 'no problem'}; all: {check_site(nodes)}"


def edit(nodes: dict[str, Any], host: str, path: str, old: str, new: str) -> dict[str, Any]:
    nodes = copy.deepcopy(nodes)
    text = nodes[host]["files"][path]
    assert old in text, old
    nodes[host]["files"][path] = text.replace(old, new)
    return nodes


# --- the readers --------------------------------------------------------------------------------------------------

def test_systemd_words_follow_systemds_quoting() -> None:
    line = 'a "b c" ' + "'d e' " + 'f\\"g 100%% $$HOME $MAINPID "x\\ty"'
    assert checker.systemd_words(line) == ["a", "b c", "d e", 'f"g', "100%", "$HOME", "$MAINPID", "x\ty"]
    assert checker.exec_argv("-/usr/bin/docker rm -f x") == ["/usr/bin/docker", "rm", "-f", "x"]


def test_continuation_lines_are_joined() -> None:
    entries = checker.unit_entries("[Service]\nExecStart=/bin/a \\\n    --b 1 \\\n    --c\nUser=x\n")
    assert entries == [("Service", "ExecStart", "/bin/a      --b 1      --c"), ("Service", "User", "x")]


def test_docker_run_options_and_command() -> None:
    run = checker.docker_run(["/usr/bin/docker", "run", "--rm", "-it", "--name", "x", "--gpus", "device=0,1",
                              "--ipc=host", "-p", "127.0.0.1:8000:30000", "img:1", "sglang", "serve", "--tp-size", "2"])
    assert run is not None and run.image == "img:1" and run.command == ("sglang", "serve", "--tp-size", "2")
    assert run.values("--gpus") == ["device=0,1"] and run.values("--ipc") == ["host"]
    assert published("127.0.0.1:8000:30000") == 8000 and published("30000") is None


def test_the_good_tree_passes() -> None:
    assert check_site(tree()) == []


# --- PD pairs ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("old,new,what", [
    ("--tp-size 8 \\", "--tp-size 8 \\\n    --kv-cache-dtype fp8_e4m3 \\", r"kv-cache-dtype 'auto' on p1, 'fp8_e4m3' on d1"),
    ("--disaggregation-transfer-backend mooncake", "--disaggregation-transfer-backend nixl",
     r"--disaggregation-transfer-backend 'mooncake' on p1, 'nixl' on d1"),
    ("--model-path /models/glm", "--model-path /models/glm-bf16", r"checkpoint 'glm' on p1, 'glm-bf16' on d1"),
    ("--tp-size 8 \\", "--tp-size 8 \\\n    --quantization fp8 \\", r"--quantization None on p1, 'fp8' on d1"),
])
def test_pd_workers_must_agree_on_what_shapes_the_kv_cache(old: str, new: str, what: str) -> None:
    nodes = edit(tree(), "d1", UNITS + "sglang-glm-decode.service", old, new)
    refused(nodes, "d1", r"^the PD workers behind sglang-router\.service \(r1\) do not agree on what shapes the KV cache "
                         rf"they exchange: .*{what}")


def test_the_router_must_use_the_bootstrap_port_the_prefill_binds() -> None:
    nodes = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "--tp-size 8 \\",
                 "--tp-size 8 \\\n    --disaggregation-bootstrap=9100 \\")
    refused(nodes, "r1", r"^sglang-router\.service sends the bootstrap of http://10\.0\.0\.1:30000 to port 8998 "
                         r"\(sglang-router default\), but sglang-glm-prefill\.service on p1 binds "
                         r"--disaggregation-bootstrap-port 9100")
    moved = edit(tree(), "r1", UNITS + "sglang-router.service", "http://10.0.0.1:30000 ", "http://10.0.0.1:30000 9000 ")
    refused(moved, "r1", r"to port 9000, but sglang-glm-prefill\.service on p1 binds --disaggregation-bootstrap-port 8998")


def test_a_worker_the_router_names_by_the_wrong_role() -> None:
    swapped = edit(tree(), "r1", UNITS + "sglang-router.service", "--prefill http://10.0.0.1:30000 --decode "
                   "http://10.0.0.2:30100", "--prefill http://10.0.0.2:30100 --decode http://10.0.0.1:30000")
    refused(swapped, "r1", r"names http://10\.0\.0\.2:30100 a prefill worker, but sglang-glm-decode\.service on d1 runs "
                           r"--disaggregation-mode decode")


# --- routers -------------------------------------------------------------------------------------------------------

def plain_router(*extra: str, workers: str = "http://10.0.0.1:30000 http://10.0.0.2:30100") -> str:
    return unit("/opt/sglang/venvs/0.5.23/bin/python -m sglang_router.launch_router --worker-urls "
                f"{workers} --host 0.0.0.0 --port 8000 {' '.join(extra)}", post=PROBE.format(port=8000))


def plain_site(decode_name: str = "zai-org/GLM-5.3") -> dict[str, Any]:
    nodes = tree()
    for host, name in (("p1", "glm-prefill"), ("d1", "glm-decode")):
        path = UNITS + f"sglang-{name}.service"
        text = nodes[host]["files"][path]
        text = text.replace(" \\\n    --disaggregation-mode prefill", "").replace(" \\\n    --disaggregation-mode decode", "")
        text = text.replace(" \\\n    --disaggregation-transfer-backend mooncake", "")
        nodes[host]["files"][path] = text
    nodes["r1"]["files"][UNITS + "sglang-router.service"] = plain_router()
    return edit(nodes, "d1", UNITS + "sglang-glm-decode.service", "--served-model-name zai-org/GLM-5.3",
                f"--served-model-name {decode_name}") if decode_name != "zai-org/GLM-5.3" else nodes


def test_a_plain_pool_of_one_model_passes() -> None:
    assert check_site(plain_site()) == []


def test_a_router_pool_serves_one_model() -> None:
    refused(plain_site("glm-5.3-canary"), "r1",
            r"^sglang-router\.service spreads requests over servers of different models \(glm-5\.3-canary on d1; "
            r"zai-org/GLM-5\.3 on p1\); a router pool serves one model")


@pytest.mark.parametrize("extra,host,pattern", [
    (["--hos", "0.0.0.0:8000"], "r1", r"sets host 2 times \(--host 0\.0\.0\.0, --hos 0\.0\.0\.0:8000\)"),
    (["--port", "9000"], "r1", r"^sglang-router\.service sets port 2 times \(--port 8000, --port 9000\); sglang-router "
                               r"keeps the last"),
    (["--api-key", "abc"], "r1", r"^sglang-router\.service puts --api-key on the command line"),
    (["--redis-url", "redis://ops:hunter2@10.0.0.5:6379"], "r1",
     r"sglang-router\.service holds a URL with a password \(user:password@\), and it is a unit file"),
])
def test_router_lines(extra: list[str], host: str, pattern: str) -> None:
    nodes = plain_site()
    nodes["r1"]["files"][UNITS + "sglang-router.service"] = plain_router(*extra)
    refused(nodes, host, pattern)


def test_router_host_with_a_port() -> None:
    nodes = plain_site()
    nodes["r1"]["files"][UNITS + "sglang-router.service"] = plain_router().replace("--host 0.0.0.0", "--host 0.0.0.0:8000")
    refused(nodes, "r1", r"^sglang-router\.service: --host 0\.0\.0\.0:8000 holds a port; sglang-router takes the address "
                         r"alone \(--host 0\.0\.0\.0\) and the port from --port")


def test_a_router_worker_nobody_serves() -> None:
    nodes = plain_site()
    nodes["r1"]["files"][UNITS + "sglang-router.service"] = plain_router(workers="http://10.0.0.1:30000 http://10.0.0.7:30000")
    refused(nodes, "r1", r"^sglang-router\.service sends requests to http://10\.0\.0\.7:30000, which no server of the "
                         r"site serves")


# --- one machine, several servers ------------------------------------------------------------------------------------

TP4 = unit("/opt/sglang/venvs/0.5.23/bin/sglang serve --model-path /m --tp-size 4 --host 0.0.0.0 --port {port}",
           env_file="/etc/sglang/{name}.env", post=PROBE)


def two_tp4(mask_a: str | None, mask_b: str | None, port_b: int = 31000) -> dict[str, Any]:
    """Two TP4 servers on one 8-GPU box: what the planner cannot produce today (one instance per host)."""
    def files(name: str, port: int, mask: str | None) -> dict[str, str]:
        return {UNITS + f"sglang-{name}.service": TP4.format(port=port, name=name),
                f"/etc/sglang/{name}.env": f"CUDA_VISIBLE_DEVICES={mask}\n" if mask is not None else "# env\n"}
    return {"a": h200("box1", files("a", 30000, mask_a)), "b": h200("box1", files("b", port_b, mask_b))}


def test_two_servers_with_their_own_gpus_share_a_box() -> None:
    assert check_site(two_tp4("0,1,2,3", "4,5,6,7")) == []


def test_two_servers_on_the_same_gpus_are_refused() -> None:
    refused(two_tp4(None, None), "a", r"^GPU 0, 1, 2, 3 of box1 would serve sglang-a\.service \(a\) and "
                                      r"sglang-b\.service \(b\) at once; give each server its own GPUs")
    refused(two_tp4("0,1,2,3", "2,3,4,5"), "b", r"^GPU 2, 3 of box1 would serve")


def test_a_mask_that_hides_half_the_gpus_of_a_tp8_server() -> None:
    nodes = edit(tree(), "p1", "/etc/sglang/glm-prefill.env", "MC_FORCE_MNNVL=1\n", "MC_FORCE_MNNVL=1\nCUDA_VISIBLE_DEVICES=0,1,2,3\n")
    refused(nodes, "p1", r"^sglang-glm-prefill\.service needs 8 GPUs \(--tp-size 8\) but sees 4 \(0, 1, 2, 3\)")


def test_a_mask_naming_a_gpu_the_machine_lacks() -> None:
    refused(two_tp4("0,1,2,3", "4,5,6,8"), "b", r"^sglang-b\.service: CUDA_VISIBLE_DEVICES=4,5,6,8 names GPU 8, but it "
                                                r"sees 8 \(the machine has 8\)")


def test_docker_gpus_device_list_counts() -> None:
    # the unit line as typed: systemd unquotes "\"device=0,1,2,3\"" to "device=0,1,2,3", one CSV field for docker
    nodes = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "--gpus all", '--gpus "\\"device=0,1,2,3\\""')
    refused(nodes, "p1", r"needs 8 GPUs \(--tp-size 8\) but sees 4")


def test_an_unquoted_docker_device_list_is_device_0_and_a_count() -> None:
    """docker reads --gpus as one CSV record (docker/cli opts/gpus.go): device=0,1,2,3 is `device=0` and bare counts 1,
    2 and 3 (the last wins), and the daemon refuses a request with both (moby: "cannot set both Count and DeviceIDs on
    device request")."""
    nodes = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "--gpus all", "--gpus device=0,1,2,3")
    refused(nodes, "p1", r"^sglang-glm-prefill\.service: --gpus device=0,1,2,3: docker reads its value as CSV, so this "
                         r"is device 0 and a count of 3, which the daemon refuses \(cannot set both Count and DeviceIDs "
                         r"on device request\); quote the device list inside the value")
    one = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "--gpus all", "--gpus device=5")
    refused(one, "p1", r"needs 8 GPUs \(--tp-size 8\) but sees 1 \(5\)")
    shell = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "--gpus all", "--gpus '\"device=0,1\"'")
    refused(shell, "p1", r"needs 8 GPUs \(--tp-size 8\) but sees 2 \(0, 1\)")  # systemd's '...' quoting, as a shell's


REPLICA = unit("/opt/sglang/venvs/0.5.23/bin/sglang serve --model-path /m --tp-size 2 --nccl-port {nccl} "
               "--host 0.0.0.0 --port {port}", env_file="/etc/sglang/{name}.env", post=PROBE)
DOCKER_REPLICA = unit("/usr/bin/docker run --rm --name sglang-{name} --env-file /etc/sglang/{name}.env --gpus {gpus} "
                      "--shm-size 32g --ipc=host -p {port}:{port} -v /m:/m:ro lmsysorg/sglang:v0.5.23-cu129 sglang serve "
                      "--model-path /m --tp-size 2 --host 0.0.0.0 --port {port}",
                      env_file="/etc/sglang/{name}.env", post=PROBE)


def four_replicas(masks: list[str], ports: list[int], nccl: list[int]) -> dict[str, Any]:
    """One host running four TP2 servers side by side on its 8 GPUs, each with its own mask, --port and NCCL port."""
    files = {}
    for i, (mask, port, nccl_port) in enumerate(zip(masks, ports, nccl)):
        name = f"q-r{i}"
        files[UNITS + f"sglang-{name}.service"] = REPLICA.format(nccl=nccl_port, port=port, name=name)
        files[f"/etc/sglang/{name}.env"] = f"CUDA_VISIBLE_DEVICES={mask}\n"
    return {"q": h200("box2", files)}


def test_four_replicas_with_their_own_gpus_and_ports_share_a_box() -> None:
    assert check_site(four_replicas(["0,1", "2,3", "4,5", "6,7"], [30000, 30010, 30020, 30030],
                                    [30001, 30011, 30021, 30031])) == []


def test_replicas_sharing_gpus_or_an_nccl_port_are_refused() -> None:
    refused(four_replicas(["0,1", "2,3", "3,4", "6,7"], [30000, 30010, 30020, 30030], [30001, 30011, 30021, 30031]),
            "q", r"^GPU 3 of box2 would serve sglang-q-r1\.service \(q\) and sglang-q-r2\.service \(q\) at once")
    refused(four_replicas(["0,1", "2,3", "4,5", "6,7"], [30000, 30010, 30020, 30030], [29500] * 4),
            "q", r"^port 29500 is bound twice on box2: sglang-q-r0\.service --nccl-port of q and sglang-q-r1\.service "
                 r"--nccl-port of q")
    refused(four_replicas(["0,1", "2,3", "4,5", "6,8"], [30000, 30010, 30020, 30030], [30001, 30011, 30021, 30031]),
            "q", r"^sglang-q-r3\.service: CUDA_VISIBLE_DEVICES=6,8 names GPU 8, but it sees 8 \(the machine has 8\)")
    # 30233 is replica 0's SGLang-internal block (--port + 233): a replica listening there collides with it
    refused(four_replicas(["0,1", "2,3", "4,5", "6,7"], [30000, 30010, 30020, 30233], [30001, 30011, 30021, 30031]),
            "q", r"^port 30233 is bound twice on box2: sglang-q-r0\.service --port \+233 \(SGLang internal\) of q and "
                 r"sglang-q-r3\.service --port of q")


def test_docker_replicas_with_quoted_device_lists() -> None:
    def tree(gpus: list[str]) -> dict[str, Any]:
        files = {}
        for i, spec in enumerate(gpus):
            name = f"d-r{i}"
            files[UNITS + f"sglang-{name}.service"] = DOCKER_REPLICA.format(name=name, gpus=spec, port=30000 + 10 * i)
            files[f"/etc/sglang/{name}.env"] = "# env\n"
        return {"d": h200("box3", files)}
    # as the unit holds them: systemd unquotes \"device=0,1\" to "device=0,1", one CSV field for docker
    assert check_site(tree(['"\\"device=0,1\\""', '"\\"device=2,3\\""'])) == []
    refused(tree(['"\\"device=0,1\\""', '"\\"device=1,2\\""']), "d",
            r"^GPU 1 of box3 would serve sglang-d-r0\.service \(d\) and sglang-d-r1\.service \(d\) at once")
    refused(tree(['"\\"device=0,1\\""', "device=2,3"]), "d",
            r"^sglang-d-r1\.service: --gpus device=2,3: docker reads its value as CSV, so this is device 2 and a count "
            r"of 3, which the daemon refuses")


def test_same_ports_and_unit_names_on_one_box() -> None:
    nodes = two_tp4("0,1,2,3", "4,5,6,7", port_b=30000)
    refused(nodes, "b", r"^port 30000 is bound twice on box1: sglang-a\.service --port of a and sglang-b\.service --port "
                        r"of b")
    same_name = two_tp4("0,1,2,3", "4,5,6,7")
    same_name["b"]["files"] = {p.replace("sglang-b", "sglang-a").replace("/b.env", "/a.env"): t.replace("/b.env", "/a.env")
                               for p, t in same_name["b"]["files"].items()}
    refused(same_name, "a", r"^/etc/systemd/system/sglang-a\.service is written differently by a and b, which are one "
                            r"machine \(box1\): each run, the last one written wins\. Give each instance its own name")


def test_a_machine_file_two_inventory_names_write_differently() -> None:
    """Two inventory names of one machine whose exporters' firewall differs (a server's DCGM port, a router's metrics
    port): one file, two texts, so whichever host runs last drops the other's guard."""
    nodes = two_tp4("0,1,2,3", "4,5,6,7")
    nodes["a"]["files"]["/etc/metalserve/monitoring-firewall.nft"] = "table inet metalserve_monitoring {\n  # 9100, 9400\n}\n"
    nodes["b"]["files"]["/etc/metalserve/monitoring-firewall.nft"] = "table inet metalserve_monitoring {\n  # 9100, 29000\n}\n"
    refused(nodes, "b", r"^/etc/metalserve/monitoring-firewall\.nft is written differently by a and b, which are one "
                        r"machine \(box1\): each run, the last one written wins\. A file of the machine must read the same")


def test_two_spellings_of_one_flag() -> None:
    nodes = edit(tree(), "m2", UNITS + "sglang-pair.service", "--tp-size 16", "--tp-size 16 --tensor-parallel-size 8")
    refused(nodes, "m2", r"^sglang-pair\.service sets tp_size 2 times \(--tp-size 16, --tensor-parallel-size 8\); SGLang "
                         r"keeps the last")
    refused(nodes, "m2", r"uses 4 of the 8 GPUs it sees: --tp-size counts the GPUs of every member")


# --- secrets and environment values ---------------------------------------------------------------------------------

TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"


@pytest.mark.parametrize("path,text,mode,pattern", [
    ("/etc/sglang/glm-prefill.env", f"HF_TOKEN={TOKEN}\n", "0644",
     r"^/etc/sglang/glm-prefill\.env holds a Hugging Face token \(hf_\.\.\.\), and it is a file others can read \(mode 0644\)"),
    ("/etc/sglang/glm-prefill.env", "MC_METADATA=http://ops:hunter2@10.0.0.5:8080/metadata\n", None,
     r"holds a URL with a password \(user:password@\), and it is a file others can read \(mode unknown\)"),
])
def test_secrets_in_readable_files(path: str, text: str, mode: str | None, pattern: str) -> None:
    nodes = copy.deepcopy(tree())
    nodes["p1"]["files"][path] = text
    if mode:
        nodes["p1"]["modes"][path] = mode
    else:
        nodes["p1"]["modes"].pop(path, None)
    refused(nodes, "p1", pattern)
    assert TOKEN not in "\n".join(problems(nodes)) and "hunter2" not in "\n".join(problems(nodes))


def test_a_secret_in_a_0600_file_is_where_it_belongs() -> None:
    nodes = copy.deepcopy(tree())
    nodes["p1"]["files"]["/etc/sglang/glm-prefill.env"] = f"HF_TOKEN={TOKEN}\n"
    assert check_site(nodes) == []


def test_secrets_in_units_and_command_lines() -> None:
    in_unit = copy.deepcopy(tree())
    path = UNITS + "sglang-glm-prefill.service"
    in_unit["p1"]["files"][path] = in_unit["p1"]["files"][path].replace("Type=exec", "Type=exec\nEnvironment=HF_TOKEN=x")
    refused(in_unit, "p1", r"^/etc/systemd/system/sglang-glm-prefill\.service sets HF_TOKEN in Environment=")
    on_line = edit(tree(), "p1", path, "--tp-size 8 \\", "--tp-size 8 \\\n    --api-key s3cr3t \\")
    refused(on_line, "p1", r"^sglang-glm-prefill\.service puts --api-key on the command line")
    abbreviated = edit(tree(), "p1", path, "--tp-size 8 \\", "--tp-size 8 \\\n    --admin-api s3cr3t \\")
    refused(abbreviated, "p1", r"^sglang-glm-prefill\.service puts --admin-api on the command line")
    docker_e = edit(tree(), "p1", path, "--gpus all", "--gpus all -e HF_TOKEN=abc")
    refused(docker_e, "p1", r"passes HF_TOKEN with docker -e")


@pytest.mark.parametrize("line,pattern", [
    ("NCCL_P2P_DISABLE=True", r"NCCL_P2P_DISABLE=True in /etc/sglang/glm-prefill\.env; NCCL reads its variables as "
                              r"integers, so 'True' is 0 \(off\)\. Write 1"),
    ("NCCL_IB_DISABLE=no", r"'no' is 0 \(off\)\. Write 0"),
    # SGLang 0.5.23's sglang/srt/utils/common.py get_bool_env_var: only true/1 are true, anything else false
    ("SGLANG_SET_CPU_AFFINITY=yes", r"SGLANG_SET_CPU_AFFINITY=yes .*get_bool_env_var reads it as false.*Write true/1 or "
                                    r"false/0"),
])
def test_environment_values_as_their_consumers_read_them(line: str, pattern: str) -> None:
    nodes = edit(tree(), "p1", "/etc/sglang/glm-prefill.env", "MC_FORCE_MNNVL=1\n", f"MC_FORCE_MNNVL=1\n{line}\n")
    refused(nodes, "p1", pattern)


def test_environment_values_their_consumers_read_pass() -> None:
    """The cookbook's own GB300 + mooncake environment: SGLang reads True, NCCL and Mooncake read 1."""
    nodes = edit(tree(), "p1", "/etc/sglang/glm-prefill.env", "MC_FORCE_MNNVL=1\n",
                 "MC_FORCE_MNNVL=1\nNCCL_MNNVL_ENABLE=1\nSGLANG_MOONCAKE_CUSTOM_MEM_POOL=True\nNCCL_IB_HCA==mlx5_0:1\n")
    assert check_site(nodes) == []


# --- how the files run: probes and bindings -----------------------------------------------------------------------------

def test_a_probe_at_loopback_for_a_server_bound_to_one_address() -> None:
    nodes = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "--host 0.0.0.0", "--host 10.0.0.1")
    refused(nodes, "p1", r"^sglang-glm-prefill\.service: its health probe asks http://127\.0\.0\.1:30000/health, but the "
                         r"server binds --host 10\.0\.0\.1 only")


def test_a_probe_at_the_wrong_port() -> None:
    nodes = edit(tree(), "d1", UNITS + "sglang-glm-decode.service", "127.0.0.1:30100", "127.0.0.1:30000")
    refused(nodes, "d1", r"its health probe asks http://127\.0\.0\.1:30000/health, but the server answers on port 30100")


def test_a_published_container_bound_to_its_own_loopback() -> None:
    nodes = edit(tree(), "a1", UNITS + "sglang-glm.service", "--host 0.0.0.0", "--host 127.0.0.1")
    refused(nodes, "a1", r"^sglang-glm\.service: the server binds 127\.0\.0\.1 inside its container and docker publishes "
                         r"30000:30000: docker forwards to the container's own address, so nothing reaches it")


def test_published_port_is_what_the_probe_and_router_use() -> None:
    nodes = edit(tree(), "a1", UNITS + "sglang-glm.service", "-p 30000:30000", "-p 31000:30000")
    refused(nodes, "a1", r"its health probe asks http://127\.0\.0\.1:30000/health, but the server answers on port 31000")


# --- multi-node instances -----------------------------------------------------------------------------------------

def test_members_must_share_the_heads_rendezvous_address() -> None:
    nodes = edit(tree(), "m2", UNITS + "sglang-pair.service", "--dist-init-addr 10.0.1.1:20000",
                 "--dist-init-addr 10.0.1.9:20000")
    refused(nodes, "m1", r"^the members of sglang-pair\.service rendezvous at different addresses \(m1: 10\.0\.1\.1:20000, "
                         r"m2: 10\.0\.1\.9:20000\)")


def test_a_loopback_rendezvous() -> None:
    nodes = tree()
    for host in ("m1", "m2"):
        nodes = edit(nodes, host, UNITS + "sglang-pair.service", "10.0.1.1:20000", "127.0.0.1:20000")
    refused(nodes, "m2", r"^sglang-pair\.service: the rendezvous address 127\.0\.0\.1:20000 is loopback")


def test_the_rendezvous_address_is_the_heads_own() -> None:
    nodes = tree()
    for host in ("m1", "m2"):
        nodes = edit(nodes, host, UNITS + "sglang-pair.service", "10.0.1.1:20000", "10.0.1.2:20000")
    refused(nodes, "m1", r"^sglang-pair\.service: the rendezvous address 10\.0\.1\.2 is not an address of the head m1 "
                         r"\(10\.0\.1\.1\)")


def test_known_addresses_of_the_head_count() -> None:
    """A rendezvous on the head's IPoIB address: fine when the node is known to hold it (gathered facts)."""
    nodes = tree()
    for host in ("m1", "m2"):
        nodes = edit(nodes, host, UNITS + "sglang-pair.service", "10.0.1.1:20000", "192.168.2.11:20000")
        nodes = edit(nodes, host, "/etc/metalserve/sglang-firewall.nft", "10.0.1.1, 10.0.1.2",
                     "10.0.1.1, 10.0.1.2, 192.168.2.11, 192.168.2.12")
    nodes["m1"]["addresses"] = ["10.0.1.1", "192.168.2.11"]
    nodes["m2"]["addresses"] = ["10.0.1.2", "192.168.2.12"]
    assert check_site(nodes) == []


def test_ranks_of_an_instance() -> None:
    nodes = edit(tree(), "m2", UNITS + "sglang-pair.service", "--node-rank 1", "--node-rank 0")
    refused(nodes, "m2", r"^sglang-pair\.service is run by 2 host\(s\) \(m1: rank 0 of 2, m2: rank 0 of 2\); an "
                         r"instance of --nnodes 2 needs ranks 0\.\.1 once each")


def test_two_instances_on_one_rendezvous() -> None:
    nodes = tree()
    for host, rank in (("n1", 0), ("n2", 1)):
        files = {UNITS + "sglang-pair2.service": member(rank), "/etc/sglang/pair.env": "# env\n"}
        nodes[host] = h200(f"10.0.3.{rank + 1}", files)
    refused(nodes, "n2", r"^sglang-pair\.service and sglang-pair2\.service rendezvous at the same address 10\.0\.1\.1:20000")


def test_the_firewall_admits_exactly_the_members() -> None:
    missing = edit(tree(), "m1", "/etc/metalserve/sglang-firewall.nft", "10.0.1.1, 10.0.1.2", "10.0.1.1, 10.0.1.3")
    refused(missing, "m1", r"^/etc/metalserve/sglang-firewall\.nft keeps m2 of sglang-pair\.service away from the rendezvous "
                           r"port 20000 \(it admits 10\.0\.1\.1, 10\.0\.1\.3; m2 is 10\.0\.1\.2\)")
    refused(missing, "m1", r"admits 10\.0\.1\.3 to the rendezvous port 20000 of sglang-pair\.service, which is no member's "
                           r"address")


def test_a_firewall_that_guards_the_rendezvous_port_alone() -> None:
    """SGLang 0.5.23 binds DP attention's ZMQ ports at the rendezvous port + 1 .. + 6 (PortArgs.init_new): a table
    that guards 20000 alone leaves 20001-20006 open to any host."""
    nodes = edit(tree(), "m1", "/etc/metalserve/sglang-firewall.nft", "tcp dport { 20000, 20001, 20002, 20003, 20004, "
                 "20005, 20006 } ip saddr", "tcp dport { 20000 } ip saddr")
    refused(nodes, "m1", r"^/etc/metalserve/sglang-firewall\.nft guards the rendezvous port 20000 of sglang-pair\.service "
                         r"but not 20001, 20002, 20003, 20004, 20005, 20006, which SGLang binds from the rendezvous port \+ 1")


def test_an_address_claimed_by_two_machines() -> None:
    nodes = copy.deepcopy(tree())
    nodes["m2"]["addresses"] = ["10.0.1.2", "10.0.1.1"]
    for host in ("m1", "m2"):
        refused(nodes, host, r"^address 10\.0\.1\.1 is claimed by 2 machines, 10\.0\.1\.1 \(m1\) and 10\.0\.1\.2 \(m2\): "
                             r"every machine needs its own address")


def test_addresses_every_machine_holds_are_nobody_s_claim() -> None:
    """Gathered facts list docker's bridge (172.17.0.1 on every docker host) and each NIC's link-local fe80:: address,
    which other hosts also hold (a lab's containers share one kernel's): no traffic of the site goes there, so two
    machines holding them is no mistake."""
    nodes = copy.deepcopy(tree())
    for node in nodes.values():
        node["addresses"] = [node["machine"], "172.17.0.1", "fe80::42:acff:fe11:1", "127.0.0.1", "::1"]
    assert check_site(nodes) == []


# --- vendors -----------------------------------------------------------------------------------------------------------

def test_a_cuda_image_on_an_amd_node() -> None:
    nodes = edit(tree(), "a1", UNITS + "sglang-glm.service", "lmsysorg/sglang-rocm:v0.5.13.post1-rocm720-mi35x-20260618",
                 "lmsysorg/sglang:v0.5.13.post1-cu129")
    refused(nodes, "a1", r"^sglang-glm\.service runs lmsysorg/sglang:v0\.5\.13\.post1-cu129, a CUDA image, on an AMD "
                         r"mi355x node")


def test_a_rocm_image_and_amd_devices_on_an_nvidia_node() -> None:
    nodes = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "lmsysorg/sglang:v0.5.23-cu129",
                 "lmsysorg/sglang-rocm:v0.5.23-rocm720-mi35x")
    refused(nodes, "p1", r"runs lmsysorg/sglang-rocm:v0\.5\.23-rocm720-mi35x, a ROCm image, on an NVIDIA h200 node")
    kfd = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "--gpus all", "--gpus all --device=/dev/kfd")
    refused(kfd, "p1", r"passes /dev/kfd into its container, a device of AMD nodes")


def test_deepep_and_nvidia_options_on_an_amd_node() -> None:
    nodes = edit(tree(), "a1", UNITS + "sglang-glm.service", "--tp-size 8", "--tp-size 8 --moe-a2a-backend deepep")
    refused(nodes, "a1", r"^sglang-glm\.service runs --moe-a2a-backend deepep, which only NVIDIA GPUs have; a1 is AMD mi355x")
    gpus = edit(tree(), "a1", UNITS + "sglang-glm.service", "--device=/dev/kfd", "--gpus all --device=/dev/kfd")
    refused(gpus, "a1", r"hands GPUs to docker with --gpus, which only NVIDIA nodes have")
    aiter = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "--tp-size 8 \\", "--tp-size 8 \\\n    --attention-backend aiter \\")
    refused(aiter, "p1", r"runs --attention-backend aiter, which only AMD GPUs have; p1 is NVIDIA h200")


def test_a_uv_venv_on_an_amd_node() -> None:
    nodes = copy.deepcopy(tree())
    nodes["a1"]["files"][UNITS + "sglang-glm.service"] = unit(
        "/opt/sglang/venvs/0.5.23/bin/sglang serve --model-path zai-org/GLM-5.3 --tp-size 8 --host 0.0.0.0 --port 30000",
        env_file="/etc/sglang/glm.env", post=PROBE.format(port=30000))
    refused(nodes, "a1", r"^sglang-glm\.service runs SGLang from a uv venv \(/opt/sglang/venvs/0\.5\.23/bin/sglang\) on an "
                         r"AMD mi355x node: PyPI's SGLang wheels pull CUDA builds")


def test_hip_variables_on_an_nvidia_node() -> None:
    nodes = edit(tree(), "p1", "/etc/sglang/glm-prefill.env", "MC_FORCE_MNNVL=1\n", "MC_FORCE_MNNVL=1\nHIP_VISIBLE_DEVICES=0\n")
    refused(nodes, "p1", r"sets HIP_VISIBLE_DEVICES, which only AMD runtimes read")


# --- the release that reads each command ---------------------------------------------------------------------------------

def test_each_command_is_read_by_the_release_that_runs_it() -> None:
    """0.5.13.post1 (the ROCm image's release) has --cuda-graph-max-bs; 0.5.23 refuses it as ambiguous."""
    newer = edit(tree(), "a1", UNITS + "sglang-glm.service", "v0.5.13.post1-rocm720", "v0.5.23-rocm720")
    refused(newer, "a1", r"^sglang-glm\.service: SGLang 0\.5\.23's parser refuses its command: ambiguous option: "
                         r"--cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill$")


def test_an_image_that_does_not_name_its_release_is_read_with_the_pinned_table() -> None:
    nodes = edit(tree(), "a1", UNITS + "sglang-glm.service", "lmsysorg/sglang-rocm:v0.5.13.post1-rocm720-mi35x-20260618",
                 "registry.local/sglang-rocm:latest")
    refused(nodes, "a1", r"SGLang 0\.5\.23's parser refuses its command \(image registry\.local/sglang-rocm:latest does not "
                         r"name its SGLang release; read with the pinned 0\.5\.23's flag table\): ambiguous option")


def test_a_release_without_a_table_is_refused() -> None:
    nodes = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "v0.5.23-cu129", "v0.5.20-cu129")
    refused(nodes, "p1", r"^sglang-glm-prefill\.service runs SGLang 0\.5\.20 \(image lmsysorg/sglang:v0\.5\.20-cu129\), "
                         r"which has no flag table in this collection")


def test_numbers_are_read_as_sglang_reads_them() -> None:
    nodes = edit(tree(), "p1", UNITS + "sglang-glm-prefill.service", "--tp-size 8 \\", "--tp-size 8 \\\n    --max-running-requests 1e3 \\")
    refused(nodes, "p1", r"argument --max-running-requests: invalid int value: '1e3'")


def test_prefixes_are_read_as_the_flags_they_stand_for() -> None:
    """--tp is --tp-size to the parser: a TP4 line on a pair of 8-GPU members leaves half of each idle."""
    nodes = tree()
    for host in ("m1", "m2"):
        nodes = edit(nodes, host, UNITS + "sglang-pair.service", "--tp-size 16", "--tp 8")
    refused(nodes, "m1", r"^sglang-pair\.service is one of 2 members of a --tp-size 8 instance, so it uses 4 of the 8 GPUs")


def test_failure_text_names_every_host() -> None:
    text = checker.failure_text([("a", "one"), ("b", "two")])
    assert text.splitlines() == ["the site checker refuses 2 host(s) (it reads the files the nodes would get):",
                                 "  - a: one", "  - b: two"]


@pytest.mark.parametrize("path", ["etc/sglang/glm-5.3.env", "/srv/../etc/sglang/glm-5.3.env",
                                  "/etc/sglang/./glm-5.3.env", "//etc/sglang/glm-5.3.env"])
def test_a_file_outside_normal_form_is_refused_whatever_input_made_it(path: str) -> None:
    """The judge reads the planned files back: a file path a role would write that is relative or names a folder
    through '..', '.' or '//' (POSIX resolves it elsewhere than it reads) is refused, whichever input it came from
    (here a plan edited after the settings were checked); the same file at its own path is not."""
    from ansible_collections.metalserve.sglang.tests.unit.monitoring_site import groups, hostvars  # noqa: PLC0415
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415

    hv = hostvars()
    site = plan_site(hv, groups())
    assert site["errors"] == {}
    entry = next(e for e in site["plans"]["a1"]["files"].values() if e.get("content") is not None)
    assert not [m for h, m in check_site(checker.nodes_from_site(site, hv)) if "normal form" in m]
    entry["path"] = path
    said = [m for h, m in check_site(checker.nodes_from_site(site, hv)) if h == "a1" and "normal form" in m]
    assert said and repr(path) in said[0]
