"""Release numbers, image tags, renames and features per SGLang release."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import flag_table, load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.engine import recipe, serve_args
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.releases import (
    at_least,
    parse_version,
    version_from_image,
)

B300_NVFP4_LL = {"gpu": "b300", "quant": "nvfp4", "strategy": "low-latency", "parsers": False}


def test_parse_and_compare() -> None:
    assert parse_version("0.5.13.post1") == (0, 5, 13, 1)
    assert at_least("0.5.13.post1", "0.5.13") and not at_least("0.5.13.post1", "0.5.14")
    assert at_least("0.5.23", "0.5.19")
    with pytest.raises(RecipeError, match=r"sglang_version: 'latest' is not an SGLang release number"):
        parse_version("latest")


@pytest.mark.parametrize("ref,version", [
    ("lmsysorg/sglang-rocm:v0.5.13.post1-rocm720-mi35x-20260618", "0.5.13.post1"),
    ("lmsysorg/sglang:v0.5.23-cu129", "0.5.23"),
    ("registry.local:5000/lmsysorg/sglang:0.5.20", "0.5.20"),
    ("lmsysorg/sglang:latest", None),
    ("lmsysorg/sglang@sha256:" + "a" * 64, None),
    ("registry.local:5000/sglang", None),
])
def test_version_from_image(ref: str, version: str | None) -> None:
    assert version_from_image(ref) == version


@pytest.mark.parametrize("release,spelling", [
    ("0.5.13.post1", "--cuda-graph-max-bs"),
    ("0.5.23", "--cuda-graph-max-bs-decode"),
])
def test_cuda_graph_flag_follows_the_release(release: str, spelling: str) -> None:
    args = serve_args({**B300_NVFP4_LL, "sglang_version": release, "install_method": "uv"})
    assert args[args.index(spelling) + 1] == "16"
    other = {"--cuda-graph-max-bs", "--cuda-graph-max-bs-decode"} - {spelling}
    assert not other & set(args)


@pytest.mark.parametrize("release,spelling", [
    ("0.5.13.post1", "--cuda-graph-max-bs"), ("0.5.14", "--cuda-graph-max-bs-decode"),
    ("0.5.19", "--cuda-graph-max-bs-decode"), ("0.5.23", "--cuda-graph-max-bs-decode")])
def test_renames_follow_the_release_without_a_table(release: str, spelling: str) -> None:
    """The rename rule alone, at releases we ship no flag table for (the engine refuses to render those)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import argv
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.engine import spell_for_release
    for given in ("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode"):
        out = spell_for_release([argv.Arg(given, "16", "test")], release, load_catalog().versions["renames"])
        assert [a.name for a in out] == [spelling]


def test_a_release_without_a_flag_table_is_refused() -> None:
    with pytest.raises(RecipeError, match=r"sglang_version: SGLang 0\.5\.21 \(sglang_version\) has no flag table"):
        serve_args({**B300_NVFP4_LL, "sglang_version": "0.5.21", "install_method": "uv"})


def test_a_v_prefix_is_the_same_release() -> None:
    assert recipe({**B300_NVFP4_LL, "sglang_version": "v0.5.23", "install_method": "uv"})["sglang_version"] == "0.5.23"


def test_new_spelling_from_a_user_is_translated_back_for_old_releases() -> None:
    args = serve_args({"gpu": "mi300x", "quant": "fp8", "strategy": "low-latency",
                       "extra_args": {"--cuda-graph-max-bs-decode": 64}})
    assert args[args.index("--cuda-graph-max-bs") + 1] == "64"


def test_default_release_follows_the_install_method_and_image() -> None:
    amd = {"gpu": "mi355x", "quant": "fp8", "strategy": "balanced"}
    assert recipe(amd)["sglang_version"] == "0.5.13.post1"
    assert recipe({**amd, "install_method": "uv"})["sglang_version"] == "0.5.23"
    with pytest.raises(RecipeError, match=r"SGLang 0\.5\.20 \(named by sglang_image .*\) has no flag table"):
        recipe({**amd, "image": "lmsysorg/sglang-rocm:v0.5.20-rocm720"})
    with pytest.raises(RecipeError, match="sglang_version: 0.5.23 contradicts the cookbook image for mi355x"):
        recipe({**amd, "sglang_version": "0.5.23"})
    digest = recipe({**amd, "image": "lmsysorg/sglang-rocm@sha256:" + "b" * 64})
    assert digest["sglang_version"] == "0.5.23"
    assert any("does not name its SGLang release" in w for w in digest["warnings"])
    assert recipe({**amd, "install_method": "uv"})["args"].count("--cuda-graph-max-bs-decode") == 1


def test_a_release_pinned_over_a_moving_tag_is_warned_about() -> None:
    """sglang_version set and the image a moving tag (:latest, as the cookbook's H200 image): the command is checked
    against that release's parser while the node runs whatever the tag holds (an operator trial found no word)."""
    h200 = {"gpu": "h200", "quant": "fp8", "strategy": "low-latency", "install_method": "docker"}
    floating = recipe({**h200, "sglang_version": "0.5.13.post1", "image": "lmsysorg/sglang:latest"})
    assert any("is a tag that moves" in w and "0.5.13.post1" in w for w in floating["warnings"]), floating["warnings"]
    pinned = recipe({**h200, "sglang_version": "0.5.23", "image": "lmsysorg/sglang@sha256:" + "c" * 64})
    assert not any("is a tag that moves" in w for w in pinned["warnings"])
    named = recipe({**h200, "image": "lmsysorg/sglang:v0.5.23-cu129"})
    assert not any("is a tag that moves" in w for w in named["warnings"])


def test_flag_tables_agree_with_the_feature_list() -> None:
    versions = load_catalog().versions
    old, new = flag_table("0.5.13.post1"), flag_table("0.5.23")
    assert old is not None and new is not None
    for feature in versions["features"]:
        assert feature["flag"] in new, feature
        assert feature["flag"] not in old, feature  # every listed feature arrived after 0.5.13.post1
    rename = versions["renames"][0]
    assert rename["old"] in old and rename["new"] not in old
    assert rename["new"] in new and rename["old"] not in new
    assert flag_table("0.5.20") is None


def test_every_cell_flag_exists_in_both_tables() -> None:
    for cell in load_catalog().models["glm-5.3"].cells:
        for name, _value in cell.flags:
            assert name in flag_table("0.5.23") or name == "--cuda-graph-max-bs", (cell.key, name)
            assert name in flag_table("0.5.13.post1"), (cell.key, name)
