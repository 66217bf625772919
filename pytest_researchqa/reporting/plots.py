"""Figures of a run (``--researchqa-plots=DIR``), as PNG and SVG. Renders; decides nothing.

* ``frontier-latency``: quality against mean latency per system, the Pareto frontier drawn
  (and ``frontier-cost`` when every system's cost is known);
* ``question-types``: each metric per question type, a bar per system;
* ``domains``: domain x system heatmap of the quality score;
* ``paper-deltas`` (with ``--researchqa-compare``): each paper's mean change per metric and system.

"Quality" is the leaderboard's sort key: the mean of the metric means the run measured.
matplotlib is an optional extra (``pytest-researchqa[plots]``), imported only here, and only
its object API is used (no pyplot, no backend switched in the user's process).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ..families import Family, MetricSpec
from ..records import RowRecord
from ..stats import paper_means
from .compare import Comparison, comparable, metric_pairs
from .summaries import Summary, by_system, group, summarize, system_of

if TYPE_CHECKING:  # pragma: no cover
    from .outcome import RunOutcome

FORMATS = ("png", "svg")
_DPI = 150
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        import pytest

        raise pytest.UsageError("--researchqa-plots draws with matplotlib, which is not installed: "
                                "pip install 'pytest-researchqa[plots]'") from None


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _save(figure: Any, folder: Path, name: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in FORMATS:
        path = folder / f"{name}.{fmt}"
        figure.savefig(path, dpi=_DPI, metadata={"Date": None} if fmt == "svg" else None)
        written.append(path)
    return written


def _measured(summaries: Sequence[Summary], family: Family) -> list[MetricSpec]:
    return [m for m in family.metrics if any(s.means.get(m.name) is not None for s in summaries)]


def _frontier(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both axes (lower x, higher y), by x."""
    best: list[tuple[float, float]] = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if not best or y > best[-1][1]:
            best.append((x, y))
    return best


def frontier(summaries: Sequence[Summary], family: Family, axis: str) -> Optional[Any]:
    """Quality against latency (``axis="latency"``) or cost; None when no system has that value."""
    measured = _measured(summaries, family)
    value: Callable[[Summary], Optional[float]] = (
        (lambda s: s.latency_s) if axis == "latency" else (lambda s: s.cost_usd))
    points = [(s.label, x, q) for s in summaries if (x := value(s)) is not None
              and (q := s.composite(measured)) is not None]
    if not points or (axis == "cost" and len(points) < len(summaries)):
        return None
    figure = _figure(7.0, 4.8)
    ax = figure.add_subplot()
    colors = _colors(len(points))
    # Named in the legend, told apart by colour and marker: labels beside close points would overlap.
    for n, (label, x, y) in enumerate(points):
        ax.scatter([x], [y], s=70, color=colors[n], marker=_MARKERS[n % len(_MARKERS)], zorder=3, label=label)
    line = _frontier([(x, y) for _, x, y in points])
    if len(line) > 1:
        ax.plot([x for x, _ in line], [y for _, y in line], color="0.5", linestyle="--", zorder=2,
                label="frontier")
    xs = [x for _, x, _ in points]
    if min(xs) > 0 and max(xs) / min(xs) > 50:
        ax.set_xscale("log")
    else:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.set_xlabel("mean latency per row (s)" if axis == "latency" else "total cost (USD)")
    ax.set_ylabel("quality (mean of metric means, each on 0-1, 1 best)")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(f"Quality vs {'latency' if axis == 'latency' else 'cost'} per system")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False, fontsize=9)
    return figure


def question_types(records: Sequence[RowRecord], summaries: Sequence[Summary], family: Family) -> Optional[Any]:
    measured = _measured(summaries, family)
    types = [t for t in family.question_types if any(r.question_type == t for r in records)]
    types += sorted({r.question_type or "?" for r in records} - set(types))
    if not measured or not types:
        return None
    systems = [s.label for s in summaries]
    per = group(records, lambda r: f"{system_of(r)}\0{r.question_type or '?'}")
    columns = min(3, len(measured))
    rows = -(-len(measured) // columns)
    figure = _figure(max(4.2 * columns, 1.1 * len(types) * columns + 2), 3.4 * rows + 0.6)
    axes = figure.subplots(rows, columns, squeeze=False)
    colors = _colors(len(systems))
    width = 0.8 / len(systems)
    for n, spec in enumerate(measured):
        metric = spec.name
        ax = axes[n // columns][n % columns]
        for k, system in enumerate(systems):
            heights = []
            for t in types:
                mean = summarize(system, per.get(f"{system}\0{t}", []), [metric]).means[metric]
                heights.append(float("nan") if mean is None else mean)
            positions = [i + (k - (len(systems) - 1) / 2) * width for i in range(len(types))]
            ax.bar(positions, heights, width=width, color=colors[k], label=system)
            zeros = [x for x, h in zip(positions, heights) if h == 0]
            if zeros:  # a measured 0 draws no bar: mark it, so it does not read as "not measured"
                ax.plot(zeros, [0.0] * len(zeros), linestyle="none", marker="_", markersize=14, markeredgewidth=4,
                        clip_on=False, zorder=4, color=colors[k])
        ax.set_title(spec.label if spec.higher_is_better else f"{spec.label} (lower is better)", fontsize=10)
        ax.set_xticks(range(len(types)), [t.replace("_", "-") for t in types], rotation=20, ha="right",
                      fontsize=8)
        ax.set_xlim(-0.5, len(types) - 0.5)
        ax.set_ylim(spec.low, spec.low + (spec.high - spec.low) * 1.05)  # the metric's own range
        ax.grid(True, axis="y", alpha=0.3)
    for n in range(len(measured), rows * columns):
        axes[n // columns][n % columns].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=min(len(systems), 4), frameon=False)
    figure.suptitle("Metrics per question type (no bar: not measured on that type; a dash on the axis: 0)",
                    fontsize=11)
    return figure


def domains(records: Sequence[RowRecord], summaries: Sequence[Summary], family: Family) -> Optional[Any]:
    measured = _measured(summaries, family)
    names = sorted({r.domain or "?" for r in records})
    systems = [s.label for s in summaries]
    if not measured or not names:
        return None
    per = group(records, lambda r: f"{system_of(r)}\0{r.domain or '?'}")
    grid = []
    for domain in names:
        row = []
        for system in systems:
            rows = per.get(f"{system}\0{domain}", [])
            quality = summarize(system, rows, [m.name for m in measured]).composite(measured)
            row.append(float("nan") if quality is None else quality)
        grid.append(row)
    figure = _figure(max(6.0, 1.3 * len(systems) + 3.0), max(2.6, 0.5 * len(names) + 1.6))
    ax = figure.add_subplot()
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(systems)), systems, rotation=20 if len(systems) > 3 else 0,
                  ha="right" if len(systems) > 3 else "center")
    ax.set_yticks(range(len(names)), names)
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            if value == value:  # not NaN
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=9,
                        color="black" if value > 0.6 else "white")
    figure.colorbar(image, ax=ax, label="quality")
    ax.set_title("Quality per domain and system\n(mean of the metric means, each on 0-1, 1 best)", fontsize=11)
    return figure


def paper_deltas(comparison: Comparison, family: Family) -> Optional[Any]:
    panels = []
    for spec in family.metrics:
        series = []
        for s in comparison.systems:
            papers, new, old = metric_pairs(comparable(s.pairs, spec.name, comparison.judged_metrics)[0], spec.name)
            if papers:
                series.append((s.system, list(paper_means(papers, [a - b for a, b in zip(new, old)]).values())))
        if series:
            panels.append((spec.label, series))
    changed = [p for p in panels if any(d for _, deltas in p[1] for d in deltas)]
    moved = bool(changed)
    panels = changed or panels[:1]  # a metric no paper moved on says nothing: left out
    if not panels:
        return None
    systems = sorted({name for _, series in panels for name, _ in series})
    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    figure = _figure(max(4.3 * columns, 7.0), (0.5 * len(systems) + 1.6) * rows + 0.7)
    axes = figure.subplots(rows, columns, squeeze=False)
    for n, (label, series) in enumerate(panels):
        ax = axes[n // columns][n % columns]
        ax.axvline(0, color="0.4", linewidth=1)
        for name, deltas in series:
            y = systems.index(name)
            jitter = [y + ((i * 7) % 11 - 5) / 20 for i in range(len(deltas))]  # spread, deterministic
            ax.scatter(deltas, jitter, s=14, alpha=0.6, color="tab:blue")
            mean = sum(deltas) / len(deltas)
            ax.plot([mean, mean], [y - 0.35, y + 0.35], color="tab:red", linewidth=2)
        ax.set_yticks(range(len(systems)), systems, fontsize=8)
        ax.set_ylim(-0.6, len(systems) - 0.4)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("per-paper mean Δ (this run − baseline)", fontsize=8)
        ax.grid(True, axis="x", alpha=0.3)
    for n in range(len(panels), rows * columns):
        axes[n // columns][n % columns].set_visible(False)
    detail = "red: mean over papers; metrics no paper moved on are left out" if moved else "no paper changed"
    figure.suptitle(f"Change per paper against {comparison.baseline}\n({detail})", fontsize=11)
    return figure


def _colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    palette = colormaps["tab10"] if n <= 10 else colormaps["tab20"]
    return [palette(i % palette.N) for i in range(n)]


def write_plots(outcome: "RunOutcome", family: Family, folder: Path) -> list[Path]:
    """Every figure the run has data for; the files written."""
    import dataclasses

    from ..text_safety import printable

    # Labels from the data go into SVG text: control characters would make the file invalid XML.
    records = [dataclasses.replace(r, system=printable(r.system),
                                   domain=None if r.domain is None else printable(r.domain),
                                   question_type=None if r.question_type is None else printable(r.question_type))
               for r in outcome.records if r.system]
    summaries = by_system(records, family.metrics)
    if not any(s.rows > s.errors for s in summaries):
        return []  # every row errored: nothing to draw, and no empty folder
    folder.mkdir(parents=True, exist_ok=True)  # a folder that cannot be made costs no rendering
    figures = {
        "frontier-latency": frontier(summaries, family, "latency"),
        "frontier-cost": frontier(summaries, family, "cost"),
        "question-types": question_types(records, summaries, family),
        "domains": domains(records, summaries, family),
        "paper-deltas": paper_deltas(outcome.comparison, family) if outcome.comparison is not None else None,
    }
    written: list[Path] = []
    for name, figure in figures.items():
        if figure is not None:
            written += _save(figure, folder, name)
    return written
