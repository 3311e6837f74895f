#!/usr/bin/env python
"""Show the topics of a model trained on `topictool synth bars` data as pictures.

Each topic's word distribution is drawn on the side x side grid of the bars data, in
the terminal with rich (darker = more probable), and as a PNG with --png when
matplotlib (the plot extra) is installed. Topics are ordered by weight; --min-weight
hides the empty ones of a non-parametric model. With --truth, each topic is labelled
with its best-matching true bar and the Hellinger distance to it.

    python scripts/show_bars.py MODEL [--truth CORPUS/truth.npz] [--png bars.png]
"""

import argparse
import math
import sys

import numpy as np

SHADES = " ░▒▓█"


def load(model):
    from topictool.snapshot import load_model

    return load_model(model)


def grid_of(snap):
    side = int(round(math.sqrt(snap.W)))
    if side * side != snap.W:
        sys.exit(f"the model has {snap.W} words, not a square grid")
    # vocabulary of synth bars: r{row}c{col}; order the columns by the grid position
    pos = np.empty(snap.W, dtype=np.int64)
    for i, w in enumerate(snap.vocab):
        try:
            r, c = w[1:].split("c")
            pos[i] = int(r) * side + int(c)
        except ValueError:
            pos[i] = i
    phi = np.zeros_like(snap.phi)
    phi[:, pos] = snap.phi
    return phi.reshape(snap.K, side, side), side


def bars_shown(phi, truth, contrast=2.0):
    """For each topic (rows of phi), the true topic (row of truth) it shows, or -1. A topic shows
    a bar when the bar's cells (the non-zero ones of its true row) are the topic's most probable
    words and the faintest of them is at least ``contrast`` times as probable as any other word:
    the bar stands out in the picture. Two bars in one topic (a cross) show neither."""
    shown = []
    for row in phi:
        found = -1
        for b, t in enumerate(truth):
            on = t > 0
            faintest = row[on].min()
            if faintest > 0 and faintest >= contrast * row[~on].max():
                found = b
                break
        shown.append(found)
    return np.array(shown, dtype=np.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--truth")
    ap.add_argument("--png")
    ap.add_argument("--min-weight", type=float, default=0.005)
    ap.add_argument("--per-row", type=int, default=7)
    a = ap.parse_args()
    snap = load(a.model)
    grids, side = grid_of(snap)
    order = [k for k in np.argsort(-snap.topic_weight) if snap.topic_weight[k] >= a.min_weight]
    labels = [f"{k}" for k in order]
    matched = None
    if a.truth:
        truth = np.load(a.truth, allow_pickle=False)["phi"]
        flat = grids.reshape(snap.K, -1)[order]
        shown = bars_shown(flat, truth)
        labels = [
            f"{'row' if b < side else 'col'} {b % side}\n{flat[i, truth[b] > 0].sum():.0%}" if b >= 0 else "-\n"
            for i, b in enumerate(shown)
        ]
        matched = len({b for b in shown if b >= 0})
    from rich.console import Console
    from rich.table import Table

    con = Console()
    for start in range(0, len(order), a.per_row):
        chunk = order[start : start + a.per_row]
        t = Table(show_header=True, show_edge=False, box=None, padding=(0, 2))
        for i in range(len(chunk)):
            t.add_column(labels[start + i], justify="center", no_wrap=True, min_width=side)
        rows = []
        for r in range(side):
            cells = []
            for k in chunk:
                g = grids[k] / grids[k].max()
                cells.append("".join(SHADES[min(len(SHADES) - 1, int(v * (len(SHADES) - 1) + 0.5))] for v in g[r]))
            rows.append(cells)
        for cells in rows:
            t.add_row(*cells)
        con.print(t)
        con.print()
    summary = f"{len(order)} topics with weight >= {a.min_weight}"
    if matched is not None:
        summary += f"; {matched} of the {2 * side} true bars shown (a topic whose most probable words are the bar)"
    con.print(summary)
    if a.png:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            hint = f"no PNG written: matplotlib is not installed ({sys.executable} -m pip install '.[plot]')"
            con.print(hint, markup=False)  # [plot] is not rich markup
            return
        cols = min(a.per_row, len(order))
        rows_n = math.ceil(len(order) / cols)
        fig, axes = plt.subplots(rows_n, cols, figsize=(1.2 * cols, 1.3 * rows_n), squeeze=False)
        for ax in axes.flat:
            ax.axis("off")
        for i, k in enumerate(order):
            ax = axes.flat[i]
            ax.imshow(grids[k], cmap="Greys", interpolation="nearest")
            ax.set_title(str(k), fontsize=7)
        fig.tight_layout()
        fig.savefig(a.png, dpi=120)
        con.print(f"wrote {a.png}", markup=False)


if __name__ == "__main__":
    main()
