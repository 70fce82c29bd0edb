"""A picture of an arena run (needs the optional `plot` extra: matplotlib)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only, never a window
import matplotlib.pyplot as plt  # noqa: E402

from ttt.ai.levels import Tally  # noqa: E402


def plot_tally(tally: Tally, x_name: str, o_name: str, path: str) -> None:
    """Outcome bars and, per side, a 3×3 heatmap of its win rate by its first move."""
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
    bars = axes[0]
    labels = [f"X {x_name}", f"O {o_name}", "draw"]
    counts = [tally.x_wins, tally.o_wins, tally.draws]
    colours = ["#2b6cb0", "#c53030", "#718096"]
    bars.bar(labels, [100 * c / tally.games for c in counts], color=colours)
    bars.set_ylabel("% of games")
    bars.set_title(f"{tally.games:,} games")
    for ax, side, column in ((axes[1], "X", 0), (axes[2], "O", 1)):
        rates = []
        for row in range(3):
            line = []
            for col in range(3):
                results = tally.by_first[side][row * 3 + col]
                played = sum(results)
                line.append(results[column] / played if played else float("nan"))
            rates.append(line)
        image = ax.imshow(rates, vmin=0, vmax=1, cmap="viridis")
        for row in range(3):
            for col in range(3):
                value = rates[row][col]
                ax.text(col, row, "–" if value != value else f"{value:.0%}",
                        ha="center", va="center", color="white")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{side} win rate by {side}'s first move")
        fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
