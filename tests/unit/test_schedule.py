import pytest

from lab.schedule import HOOKS, draw

pytestmark = pytest.mark.unit


def test_the_same_seed_draws_the_same_schedule_with_every_fault_asked_for():
    schedule = draw(7, kills=20, broker_restarts=2, zombies=1)
    assert schedule == draw(7, kills=20, broker_restarts=2, zombies=1)
    assert schedule != draw(8, kills=20, broker_restarts=2, zombies=1)
    kinds = [f.kind for f in schedule]
    assert kinds.count("kill") + kinds.count("hook") == 20
    assert kinds.count("broker") == 2 and kinds.count("zombie") == 1
    assert {f.point for f in schedule if f.kind == "hook"} == set(HOOKS)  # every commit point is hit
    assert kinds[0] != "zombie"  # something runs before the first zombie


def test_fewer_kills_than_hooks_take_the_most_telling_points_first():
    hooks = [f.point for f in draw(1, kills=2, broker_restarts=0, zombies=0) if f.kind == "hook"]
    assert sorted(hooks) == sorted(HOOKS[:2])
