"""metalserve.sglang.plan_missing: the roles' once-per-play decision to plan, from every host of the play
(tests/integration/test_plan_once.py runs it through Ansible)."""
from __future__ import annotations

from ansible_collections.metalserve.sglang.plugins.filter.plan_missing import plan_missing


def test_a_play_plans_when_any_of_its_hosts_lacks_the_plan() -> None:
    planned = {"plans": {"a": {}, "b": {}}}
    hostvars = {"a": {"metalserve_site": planned}, "b": {"metalserve_site": planned}, "c": {},
                "d": {"metalserve_site": {}}, "e": {"metalserve_site": {"skipped": True}}}
    assert plan_missing(["a", "b"], hostvars) is False
    for host in ("c", "d", "e"):  # unset, emptied (side_effect.yml's way to replan), a skipped registration
        assert plan_missing(["a", "b", host], hostvars) is True, host
