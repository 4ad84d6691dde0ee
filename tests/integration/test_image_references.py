"""Docker's own reference grammar over every image of many rendered sites (tests/validators.py), and the plan held to
it: an image the plan accepts is one the Docker daemon can read; where one image value is planted in one host, the plan
refuses it exactly when the daemon refuses the reference the node would pull (the host's rendered image when the plan
accepts it, else the value after the registry mirror, as the node would have pulled it).

The daemon parses; nothing is pulled (`docker image inspect` answers "No such image" for a reference it reads). Needs
dockerd (tests/lab/setup.sh starts it; `make integration` runs under the Docker lock).
"""
from __future__ import annotations

import functools
import shutil
import subprocess

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime
from ansible_collections.metalserve.sglang.tests import validators as v

pytestmark = pytest.mark.skipif(shutil.which("docker") is None or subprocess.run(
    ["docker", "info"], capture_output=True, check=False).returncode != 0, reason="no Docker daemon here")

M = v.Mutation
DIGEST = "sha256:" + "0123456789abcdef" * 4
MUTATIONS = [
    M("upper-case-repository", "image", "options-docker", "h1", (("sglang_image", "LMSYS/sglang:v0.5.23-cu129"),)),
    M("space-in-the-tag", "image", "options-docker", "h1", (("sglang_image", "lmsysorg/sglang:v0.5.23 cu129"),)),
    M("short-digest", "image", "options-docker", "h1", (("sglang_image", "lmsysorg/sglang@sha256:0123"),)),
    M("tag-and-digest", "image", "options-docker", "h1",
      (("sglang_image", f"lmsysorg/sglang:v0.5.23-cu129@{DIGEST}"),)),
    M("registry-with-a-port", "image", "options-docker", "h1",
      (("sglang_image", "registry.example.com:5000/lmsysorg/sglang:v0.5.23-cu129"),)),
    M("digest-only", "image", "options-docker", "h1", (("sglang_image", f"lmsysorg/sglang@{DIGEST}"),)),
    M("mirror-in-front", "image", "options-docker", "h1",
      (("sglang_image", "lmsysorg/sglang:v0.5.23-cu129"), ("sglang_install_registry_mirror", "mirror.local:5000/"))),
    M("amd-exporter-upper-case", "image", "options-docker", "a1",
      (("monitoring_amd_exporter_image", "ROCm/device-metrics-exporter:v1.5.4"),)),
]


@functools.lru_cache(maxsize=1)
def rendered() -> list[v.Rendered]:
    return [v.plan_and_render(name, site) for name, site in v.every_site().items()]


def test_every_image_of_every_site_is_a_reference_docker_reads() -> None:
    refs = v.images(rendered())
    assert len(refs) >= 5
    assert v.docker_refuses(refs) == {}


def pulled(m: v.Mutation) -> str:
    """The reference the node would pull for the planted values (the mirror in front, as the install does)."""
    values = dict(m.values)
    image = str(values.get("sglang_image") or values.get("monitoring_amd_exporter_image"))
    mirror = str(values.get("sglang_install_registry_mirror") or "")
    return mirror.rstrip("/") + "/" + image if mirror else image


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_the_plan_refuses_the_images_docker_refuses(mutation: v.Mutation) -> None:
    after = v.plan_and_render(mutation.name, mutation.apply(v.every_site()[mutation.site]))
    checker = after.errors.get(mutation.host, [])
    plan = after.plans.get(mutation.host) or {}
    ref = pulled(mutation) if checker else str(
        (plan.get("install") or {}).get("image") if "sglang_image" in dict(mutation.values)
        else (plan["monitoring"]["gpu_exporter"] or {}).get("image"))
    refused = v.docker_refuses([ref])
    assert bool(checker) == bool(refused), (
        f"{mutation.name}: the plan {'refuses' if checker else 'accepts'} it, docker "
        f"{'refuses' if refused else 'reads'} {ref!r}\nplan: {checker}\ndocker: {refused}")


def test_docker_is_given_references_it_refuses_and_references_it_reads() -> None:
    seen = {bool(v.docker_refuses([pulled(m)])) for m in MUTATIONS}
    assert seen == {True, False}
    assert runtime.check_image  # the plan's own reading is runtime.check_image; the daemon's is the judge here
