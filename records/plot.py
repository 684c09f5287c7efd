"""Drawing tuning curves: a PNG through matplotlib, or SVG and HTML by hand.

Invariants:
- matplotlib is the optional extra ``[plot]``: it is imported only inside
  ``require_matplotlib`` (importing ``records`` never loads it) and only through its
  object-oriented API (``matplotlib.figure.Figure``), so no global backend or pyplot
  state is touched; when it is missing, ``require_matplotlib`` (called by ``render_png``)
  raises ``ImportError`` naming the extra to install;
- ``render_svg`` and ``render_html`` need only the standard library; the HTML page is
  self-contained (inline SVG and CSS, no JavaScript, no external resource) and every
  text taken from a log is escaped;
- both renderers draw the same thing: one step line per ``Series`` in the order given,
  the same colours (then dash patterns past ten lines), a legend with the series
  labels and final values.
"""
import html
import math

from records.curves import axis_label, short_label, use_log_scale

# matplotlib's "tab10" colours, so the PNG and the SVG agree.
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")
PLOT_EXTRA = "plot"
INSTALL_HINT = f"pip install 'tensor-autosched[{PLOT_EXTRA}]'"


# After ten lines the colours repeat with another dash pattern (matplotlib, SVG).
DASHES = (("-", ""), ("--", "6,3"), (":", "2,2"), ("-.", "6,2,2,2"))


def color(index: int) -> str:
    return COLORS[index % len(COLORS)]


def dash(index: int) -> tuple:
    """``(matplotlib linestyle, SVG stroke-dasharray)`` of line ``index``."""
    return DASHES[index // len(COLORS) % len(DASHES)]


def legend_text(series, metric: str) -> str:
    """``label (final value)`` for a legend."""
    values = series.values(metric)
    label = short_label(series.label)
    if not values:
        return f"{label} (no valid record)"
    final = values[-1][1]
    unit = "GFLOPS" if metric == "gflops" else "ms"
    return f"{label} ({final:.4g} {unit})"


def require_matplotlib():
    """matplotlib's ``Figure`` class, or ``ImportError`` naming the extra to install."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(f"a PNG needs matplotlib, which is not installed: {INSTALL_HINT} "
                          "(or write --html, which needs nothing)") from None
    return Figure


def render_png(series: list, path, *, metric: str, title: str = "") -> None:
    """Write the curves to ``path`` as a PNG (needs matplotlib, the ``[plot]`` extra)."""
    fig = require_matplotlib()(figsize=(8, 4.5), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    for index, s in enumerate(series):
        xs, ys = zip(*s.steps(metric)) if s.points else ((), ())
        ax.plot(xs, ys, color=color(index), linestyle=dash(index)[0], linewidth=1.6,
                label=legend_text(s, metric))
    if use_log_scale(series, metric):
        ax.set_yscale("log")
    ax.set_xlabel("trials")
    ax.set_ylabel(axis_label(metric))
    ax.set_xlim(left=0)
    if metric == "gflops":
        ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(title)
    if len(series) > 8:
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.legend(fontsize="small", loc="best")
    fig.savefig(path, format="png")


# ------------------------------------------------------------------ SVG, by hand
_W, _H = 760, 380                      # plot area with its axes
_LEFT, _TOP, _RIGHT, _BOTTOM = 70, 30, 20, 45
_LEGEND_W = 330


def nice_ticks(lo: float, hi: float, count: int = 5) -> list:
    """About ``count`` round tick values from at most ``lo`` to at least ``hi`` (1, 2 or
    5 x 10^k apart)."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


def _log_ticks(lo: float, hi: float) -> list:
    return [10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


class _Axes:
    """Maps data to SVG coordinates inside the plot area."""

    def __init__(self, max_trial: float, y_lo: float, y_hi: float, log_y: bool):
        self.x_hi = max(max_trial, 1)
        self.log_y = log_y
        self.y_lo, self.y_hi = (math.log10(y_lo), math.log10(y_hi)) if log_y else (y_lo, y_hi)
        self.width = _W - _LEFT - _RIGHT
        self.height = _H - _TOP - _BOTTOM

    def x(self, trial: float) -> float:
        return _LEFT + self.width * trial / self.x_hi

    def y(self, value: float) -> float:
        v = math.log10(value) if self.log_y else value
        return _TOP + self.height * (1 - (v - self.y_lo) / (self.y_hi - self.y_lo))


def _y_range(values: list, metric: str, log_y: bool) -> tuple:
    if not values:
        return 0.0, 1.0, [0.0, 1.0]
    if log_y:
        ticks = _log_ticks(min(values), max(values))
        return ticks[0], ticks[-1], ticks
    lo = 0.0 if metric == "gflops" else min(values)
    ticks = nice_ticks(lo, max(values))
    return ticks[0], ticks[-1], ticks


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _axes_svg(axes: "_Axes", x_ticks: list, y_ticks: list, metric: str) -> list:
    out = [f'<rect x="{_LEFT}" y="{_TOP}" width="{axes.width}" height="{axes.height}" '
           'fill="none" stroke="#444"/>']
    for t in x_ticks:
        x = axes.x(t)
        out.append(f'<line x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}" y2="{_TOP + axes.height}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{_TOP + axes.height + 16}" '
                   f'text-anchor="middle">{_fmt(t)}</text>')
    for t in y_ticks:
        y = axes.y(t)
        out.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + axes.width}" y2="{y:.1f}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    out.append(f'<text x="{_LEFT + axes.width / 2}" y="{_H - 8}" '
               'text-anchor="middle">trials</text>')
    out.append(f'<text transform="translate(16 {_TOP + axes.height / 2}) rotate(-90)" '
               f'text-anchor="middle">{html.escape(axis_label(metric))}</text>')
    return out


def _dash_attr(index: int) -> str:
    pattern = dash(index)[1]
    return f' stroke-dasharray="{pattern}"' if pattern else ""


def _legend_svg(series: list, metric: str) -> list:
    out = []
    for index, s in enumerate(series):
        y = _TOP + 8 + 18 * index
        x = _W + 10
        out.append(f'<line x1="{x}" y1="{y}" x2="{x + 22}" y2="{y}" stroke="{color(index)}" '
                   f'stroke-width="2.5"{_dash_attr(index)}/>')
        out.append(f'<text x="{x + 28}" y="{y + 4}">{html.escape(legend_text(s, metric))}'
                   '</text>')
    return out


def render_svg(series: list, *, metric: str, title: str = "") -> str:
    """The curves as one ``<svg>`` element (standard library only)."""
    log_y = use_log_scale(series, metric)
    values = [v for s in series for _, v in s.values(metric)]
    y_lo, y_hi, y_ticks = _y_range(values, metric, log_y)
    max_trial = max((s.trials for s in series), default=1)
    axes = _Axes(max_trial, y_lo, y_hi, log_y)
    x_ticks = [t for t in nice_ticks(0, axes.x_hi) if t <= axes.x_hi]
    height = max(_H, _TOP + 18 * len(series) + 10)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W + _LEGEND_W}" '
             f'height="{height}" font-family="sans-serif" font-size="11">']
    if title:
        parts.append(f'<text x="{_LEFT + axes.width / 2}" y="18" text-anchor="middle" '
                     f'font-size="14">{html.escape(title)}</text>')
    parts += _axes_svg(axes, x_ticks, y_ticks, metric)
    for index, s in enumerate(series):
        corners = " ".join(f"{axes.x(t):.1f},{axes.y(v):.1f}" for t, v in s.steps(metric))
        if corners:
            parts.append(f'<polyline points="{corners}" fill="none" stroke="{color(index)}" '
                         f'stroke-width="1.8"{_dash_attr(index)}/>')
    parts += _legend_svg(series, metric)
    parts.append("</svg>")
    return "\n".join(parts)


_CSS = """body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 2em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td.r { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
p.note { color: #555; }"""


def html_table(headers, rows, align: str = "") -> str:
    """An HTML ``<table>``; ``align`` as in ``records.table.format_table``."""
    align = align.ljust(len(headers), "l")
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f'<td class="{a}">{html.escape(str(c))}</td>'
                        for c, a in zip(row, align))
        body.append(f"<tr>{cells}</tr>")
    return f"<table>\n<tr>{head}</tr>\n" + "\n".join(body) + "\n</table>"


def render_html(*, title: str, svg: str, sections: list, note: str = "") -> str:
    """A self-contained page: ``title``, the ``svg`` curves, then ``sections`` as
    ``(heading, table_html, footer_text)`` triples (a summary table per log)."""
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>{html.escape(title)}</title>", f"<style>\n{_CSS}\n</style>",
             "</head>", "<body>", f"<h1>{html.escape(title)}</h1>"]
    if note:
        parts.append(f'<p class="note">{html.escape(note)}</p>')
    parts.append(svg)
    for heading, table, footer in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(table)
        if footer:
            parts.append(f"<p>{html.escape(footer)}</p>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
