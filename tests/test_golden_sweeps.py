"""Every shipped sweep (``scenarios/**/*.sweep.toml``) expands and every grid
point validates, without running any of them.

The golden digest test (``crates/sim/tests/golden.rs``) runs every shipped
scenario but not the sweeps, which are a Python-level format; this is their
guard: a refactor that breaks a grid key or a value of any shipped sweep, or
changes how many points it has, fails here.
"""

from __future__ import annotations

import pytest

from conftest import SCENARIOS
from torrentlab.sweep import Sweep

#: Points of each shipped sweep (the product of its grid's list lengths, its [zip] length and its
#: number of [[points]]).
POINTS = {
    "bufferbloat-voip/cases.sweep.toml": 38,
    "calibration/alone.sweep.toml": 7 * 2,
    "calibration/stress.sweep.toml": 7 * 2 * 2,
    "calibration/vs-cubic.sweep.toml": 7 * 2,
    "rao2010/as.sweep.toml": 9 * 2,
    "rao2010/loss.sweep.toml": 3 * 4 * 3,
    "rao2010/rtt.sweep.toml": 9 * 5,
    "rossi2010/d.sweep.toml": 2 * 2 * 2,
    "testa2012/main.sweep.toml": 3 * 6,
    "testa2012/pairs.sweep.toml": 7,
    "testa2013/main.sweep.toml": 7 + 5,
}


def test_the_list_of_shipped_sweeps_is_complete():
    shipped = sorted(str(p.relative_to(SCENARIOS)) for p in SCENARIOS.rglob("*.sweep.toml"))
    assert shipped == sorted(POINTS), "add a new sweep to POINTS here (with its number of grid points)"


@pytest.mark.parametrize("name", sorted(POINTS))
def test_every_point_of_a_shipped_sweep_validates_and_the_point_count_is_as_expected(name):
    path = SCENARIOS / name
    sweep = Sweep.from_file(path)
    assert sweep.points() == POINTS[name]
    points = list(sweep.point_docs())
    assert len(points) == POINTS[name]
    assert len({repr(params) for params, _ in points}) == POINTS[name], "two grid points with the same parameters"
    assert len(sweep.jobs()) == POINTS[name] * sweep.runs
    sweep.check(path)  # validates every point's scenario (raises ScenarioError naming the point)
    if sweep.quick is not None or sweep.quick_runs != sweep.runs:
        assert len(sweep.jobs(quick=True)) == POINTS[name] * sweep.quick_runs
        sweep.check(path, quick=True)
