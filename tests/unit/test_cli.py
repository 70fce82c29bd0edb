"""The command line, run as `python -m ttt` in a subprocess."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import in_ci

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ttt", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def _json_of(*args: str) -> dict:
    result = _run(*args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_stats_json_prints_the_game_tree_figures():
    assert _json_of("stats", "--json") == {
        "games": 255_168,
        "x_wins": 131_184,
        "o_wins": 77_904,
        "draws": 46_080,
        "games_by_length": {"5": 1_440, "6": 5_328, "7": 47_952, "8": 72_576, "9": 127_872},
        "positions": 5_478,
        "terminal_positions": 958,
        "positions_up_to_symmetry": 765,
    }


def test_stats_without_json_prints_a_table_with_the_same_figures():
    result = _run("stats")
    assert result.returncode == 0, result.stderr
    assert "255,168" in result.stdout
    assert "5,478" in result.stdout
    assert "765" in result.stdout


def test_arena_json_with_a_seed_is_reproducible_and_perfect_never_loses():
    args = ("arena", "--x", "perfect", "--o", "random", "--games", "2000", "--seed", "5", "--json")
    first, second = _run(*args), _run(*args)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert first.stdout == second.stdout
    result = json.loads(first.stdout)
    assert set(result) == {"x", "o", "games", "x_wins", "o_wins", "draws", "seed"}
    assert (result["x"], result["o"], result["games"], result["seed"]) == (
        "perfect",
        "random",
        2000,
        5,
    )
    assert result["o_wins"] == 0
    assert result["x_wins"] + result["draws"] == 2000
    assert result["x_wins"] > 1900


def test_arena_without_json_prints_one_row_per_result():
    result = _run("arena", "--x", "hard", "--o", "easy", "--games", "500", "--seed", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("X hard") for line in lines)
    assert any(line.startswith("O easy") for line in lines)
    assert any(line.startswith("draw") for line in lines)


@pytest.mark.parametrize(
    "args",
    [
        ("arena", "--x", "nope", "--o", "random", "--games", "10"),
        ("arena", "--x", "perfect", "--o", "nope", "--games", "10"),
        ("arena", "--x", "perfect", "--o", "random", "--games", "0"),
        ("arena", "--x", "perfect", "--o", "random", "--games", "-3"),
        ("arena", "--x", "perfect", "--o", "random", "--games", "many"),
        ("arena", "--x", "perfect", "--o", "random"),
        (),
        ("frobnicate",),
        ("stats", "--bogus"),
    ],
)
def test_bad_arguments_exit_2_with_one_line_on_stderr_and_no_traceback(args):
    result = _run(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("ttt: error: ")


def test_bench_json_reports_positive_numbers():
    result = _json_of("bench", "--json")
    assert set(result) == {"solve_ms", "tree_ms", "perfect_move_us", "arena_games_per_s"}
    for key, value in result.items():
        assert isinstance(value, int | float) and not isinstance(value, bool), key
        assert value > 0, key


def test_arena_plot_writes_a_png(tmp_path):
    if importlib.util.find_spec("matplotlib") is None:
        assert not in_ci(), "make test installs the plot extra"
        pytest.skip("--plot needs the optional matplotlib (installed by make test; CI fails)")
    out = tmp_path / "arena.png"
    result = _run(
        "arena", "--x", "medium", "--o", "random", "--games", "300", "--seed", "2",
        "--plot", str(out),
        env={"MPLCONFIGDIR": str(tmp_path / "mpl")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert out.stat().st_size > 1000
