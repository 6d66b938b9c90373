"""Per-case latency charts as inline SVG (no chart library, nothing loaded from elsewhere)."""

from __future__ import annotations

from html import escape

from markupsafe import Markup

ROW = 14  # px per bar
GAP = 6  # px between cases
LEFT = 150  # px for the case labels
WIDTH = 640
COLOURS = ("#2347c6", "#d9730d", "#2e8b57")
LEGEND_LINE = 16  # px per legend line
MAX_CASES = 64  # beyond this the table carries the numbers; the chart would be a wall


def case_latency_ns(case: dict, statistic: str | None) -> int | None:
    """The case's latency under the run's primary statistic, else its first one."""
    latency = case.get("latency") or []
    for measurement in latency:
        if measurement["statistic"] == statistic:
            return int(measurement["valueNs"])
    return int(latency[0]["valueNs"]) if latency else None


def _display(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.4g} µs"
    return f"{ns:.0f} ns"


def case_chart(series: list[tuple[str, dict[int, int]]], labels: dict[int, str], title: str) -> Markup:
    """Grouped horizontal bars: one group per case (in `labels` order), one bar per series."""
    cases = list(labels)[:MAX_CASES]
    values = [v for _, points in series for i, v in points.items() if i in labels]
    if not cases or not values:
        return Markup("")
    top = max(values)
    scale = (WIDTH - LEFT - 80) / top
    group_height = ROW * len(series) + GAP
    bars_height = group_height * len(cases)
    # The legend: one line per series, its whole name (cut names could not tell two runs apart).
    height = bars_height + LEGEND_LINE * len(series) + 8
    out = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for row, index in enumerate(cases):
        y = row * group_height
        out.append(f'<text x="{LEFT - 6}" y="{y + group_height / 2 + 3:.0f}" text-anchor="end">{escape(labels[index])}</text>')
        for k, (name, points) in enumerate(series):
            value = points.get(index)
            if value is None:
                continue
            by = y + k * ROW
            w = max(1.0, value * scale)
            out.append(
                f'<rect x="{LEFT}" y="{by}" width="{w:.1f}" height="{ROW - 2}" fill="{COLOURS[k % 3]}">'
                f"<title>{escape(name)} · case {index}: {_display(value)}</title></rect>"
                f'<text x="{LEFT + w + 4:.1f}" y="{by + ROW - 4}">{_display(value)}</text>'
            )
    for k, (name, _) in enumerate(series):
        legend_y = bars_height + LEGEND_LINE * (k + 1)
        out.append(f'<rect x="8" y="{legend_y - 9}" width="10" height="10" fill="{COLOURS[k % 3]}"/>')
        out.append(f'<text class="legend" x="22" y="{legend_y}">{escape(name)}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def staircase(steps: list[tuple[str, float, str]], title: str) -> Markup:
    """The #1's primary measurement over time as a step line: one step per change of #1
    (`steps`: (time label, value in ns, the record's label)), oldest first."""
    if not steps:
        return Markup("")
    width, height, left, pad = WIDTH, 180, 70, 18
    top = max(v for _, v, _ in steps) or 1.0
    n = len(steps)
    x_of = [left + (width - left - 20) * (i / max(1, n - 1) if n > 1 else 0.0) for i in range(n)]
    y_of = [pad + (height - 2 * pad - 14) * (1 - v / top) for _, v, _ in steps]
    points = []
    for i in range(n):
        if i:
            points.append(f"{x_of[i]:.1f},{y_of[i - 1]:.1f}")
        points.append(f"{x_of[i]:.1f},{y_of[i]:.1f}")
    if n == 1:
        points.append(f"{width - 20:.1f},{y_of[0]:.1f}")
    out = [
        f'<svg class="chart staircase" role="img" aria-label="{escape(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<polyline fill="none" stroke="{COLOURS[0]}" stroke-width="2" points="{" ".join(points)}"/>',
    ]
    for i, (when, value, label) in enumerate(steps):
        out.append(
            f'<circle class="step" cx="{x_of[i]:.1f}" cy="{y_of[i]:.1f}" r="4" fill="{COLOURS[1]}">'
            f"<title>{escape(when)} · {escape(label)} · {_display(value)}</title></circle>"
        )
        out.append(f'<text x="{x_of[i]:.1f}" y="{height - 4}" text-anchor="middle">{escape(when[:10])}</text>')
    out.append(f'<text x="4" y="{pad + 4}">{_display(top)}</text>')
    out.append("</svg>")
    return Markup("".join(out))
