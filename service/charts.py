"""Server-rendered SVG charts: the silent-failure rate and the volume of a series, over time.

Plain SVG without scripts, drawn from the same numbers ``GET /v1/series`` answers: a line per
group for the rate (with each point's values as a hover title), bars for the volume, a legend
in words, axes labelled with their unit.  Text and axes use ``currentColor``, so the chart
takes the page's light or dark colours; the series colours read on both.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from html import escape

from .queries import FOLDED

WIDTH, HEIGHT = 960, 330
LEFT, RIGHT, TOP = 64, 220, 26
RATE_HEIGHT, GAP, VOLUME_HEIGHT = 170, 34, 70
# Distinct on white and on near-black (Okabe-Ito, without its yellow and black).
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#7f7f7f")
OTHERS = "others"
# A rate of 1 or 2 streams swings between 0 and 100 %: the line skips buckets with fewer.
MIN_STREAMS_FOR_RATE = 5


def _parse(moment) -> datetime:
    if isinstance(moment, datetime):
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return datetime.fromisoformat(str(moment).replace("Z", "+00:00"))


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least value."""
    if value <= 0:
        return 1.0
    power = 10 ** len(str(int(value))) / 10 if value >= 1 else 1.0
    while power > value:
        power /= 10
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def _time_ticks(start: datetime, end: datetime) -> list[datetime]:
    span = (end - start).total_seconds()
    for step in (300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400):
        if span / step <= 8:
            break
    first = int(start.timestamp() // step + 1) * step
    return [datetime.fromtimestamp(t, timezone.utc) for t in range(first, int(end.timestamp()), step)]


def _time_label(moment: datetime, span_seconds: float) -> str:
    if span_seconds <= 2 * 86400:
        return moment.strftime("%H:%M")
    return moment.strftime("%b %d") if moment.hour == 0 else moment.strftime("%b %d %H:%M")


def _duration(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    if minutes % 1440 == 0:
        return "day" if minutes == 1440 else f"{minutes // 1440} days"
    if minutes % 60 == 0:
        return "hour" if minutes == 60 else f"{minutes // 60} hours"
    return "minute" if minutes == 1 else f"{minutes} minutes"


def series_svg(series: dict, *, lines: int = 6) -> str:
    """The SVG of a series as ``GET /v1/series`` gives it (points of groups per bucket)."""
    bucket = timedelta(seconds=series["bucket"])
    by = series.get("by")
    start = _parse(series["since"])
    end = _parse(series["until"]) if series.get("until") else datetime.now(timezone.utc)
    points = [(_parse(p["start"]), p["groups"]) for p in series["points"]]

    # The busiest groups get a line of their own; the others share one.
    # The groups the read folded (queries.FOLDED) are among the others.
    totals: dict[str, int] = {}
    folded = False
    for _, groups in points:
        for group in groups:
            name = str(group.get(by) or "all") if by else "all"
            if name == FOLDED:
                folded = True
                continue
            totals[name] = totals.get(name, 0) + group["total"]
    names = sorted(totals, key=lambda n: (-totals[n], n))
    drawn = names if len(names) <= lines and not folded else names[: lines - 1] + [OTHERS]
    color = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(drawn)}

    buckets: list[tuple[datetime, dict[str, list[int]]]] = []
    for moment, groups in points:
        merged: dict[str, list[int]] = {}
        for group in groups:
            name = str(group.get(by) or "all") if by else "all"
            if name not in drawn:
                name = OTHERS
            counts = merged.setdefault(name, [0, 0])
            counts[0] += group["total"]
            counts[1] += group["silent"]
        buckets.append((moment, merged))

    plot_width = WIDTH - LEFT - RIGHT
    span_seconds = max((end - start).total_seconds(), 60.0)

    def x(moment: datetime) -> float:
        return LEFT + (moment - start).total_seconds() / span_seconds * plot_width

    top_rate = _nice_ceiling(
        max([c[1] / c[0] for _, m in buckets for c in m.values() if c[0] >= MIN_STREAMS_FOR_RATE] + [0.01])
    )
    top_volume = _nice_ceiling(max([sum(c[0] for c in m.values()) for _, m in buckets] + [1]))
    volume_top = TOP + RATE_HEIGHT + GAP
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-labelledby="chart-title chart-desc" class="series-chart" '
        f'font-family="system-ui, sans-serif" font-size="12">',
        '<title id="chart-title">Silent-failure rate and volume over time</title>',
        f'<desc id="chart-desc">Rate of silent failures per {escape(by or "stream")} '
        f"and streams per {_duration(bucket)}, from "
        f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC.</desc>",
        '<g fill="none" stroke="currentColor" stroke-opacity="0.25">',
    ]
    for fraction in (0, 0.25, 0.5, 0.75, 1):
        y = TOP + RATE_HEIGHT * (1 - fraction)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_width}" y2="{y:.1f}"/>')
    out.append(
        f'<line x1="{LEFT}" y1="{volume_top + VOLUME_HEIGHT}" x2="{LEFT + plot_width}" '
        f'y2="{volume_top + VOLUME_HEIGHT}"/></g>'
    )
    out.append('<g fill="currentColor">')
    for fraction in (0, 0.5, 1):
        y = TOP + RATE_HEIGHT * (1 - fraction)
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{top_rate * fraction * 100:.3g} %</text>')
    out.append(f'<text x="{LEFT - 8}" y="{volume_top + 4}" text-anchor="end">{top_volume:,.0f}</text>')
    out.append(f'<text x="{LEFT - 8}" y="{volume_top + VOLUME_HEIGHT + 4}" text-anchor="end">0</text>')
    out.append(
        f'<text x="{LEFT}" y="{TOP - 10}" font-weight="600">Silent-failure rate '
        f"(silent / streams, per {_duration(bucket)}; buckets of at least "
        f"{MIN_STREAMS_FOR_RATE} streams)</text>"
    )
    out.append(f'<text x="{LEFT}" y="{volume_top - 8}" font-weight="600">Streams per {_duration(bucket)}</text>')
    for tick in _time_ticks(start, end):
        out.append(
            f'<text x="{x(tick):.1f}" y="{volume_top + VOLUME_HEIGHT + 18}" '
            f'text-anchor="middle">{_time_label(tick, span_seconds)}</text>'
        )
    out.append(f'<text x="{LEFT + plot_width}" y="{HEIGHT - 2}" text-anchor="end" opacity="0.7">UTC</text></g>')

    # volume: one bar per bucket, the groups stacked in legend order
    width = max(bucket.total_seconds() / span_seconds * plot_width - 1, 1)
    out.append("<g>")
    for moment, merged in buckets:
        y = volume_top + VOLUME_HEIGHT
        for name in drawn:
            stacked = merged.get(name)
            if not stacked:
                continue
            height = stacked[0] / top_volume * VOLUME_HEIGHT
            y -= height
            out.append(
                f'<rect x="{x(moment):.1f}" y="{y:.1f}" width="{width:.1f}" '
                f'height="{height:.1f}" fill="{color[name]}" fill-opacity="0.7">'
                f"<title>{escape(name)} {moment:%Y-%m-%d %H:%M}: {stacked[0]} streams"
                f"</title></rect>"
            )
    out.append("</g>")

    # rate: a line per group, and a dot with the numbers at each bucket it has streams in
    for name in drawn:
        path, dots = [], []
        previous = None  # the last bucket drawn: a line does not bridge the buckets skipped
        for moment, merged in buckets:
            drawn_counts = merged.get(name)
            if not drawn_counts or drawn_counts[0] < MIN_STREAMS_FOR_RATE:
                continue
            rate = drawn_counts[1] / drawn_counts[0]
            px = x(moment + bucket / 2)
            py = TOP + RATE_HEIGHT * (1 - min(rate / top_rate, 1))
            joined = previous is not None and moment - previous <= bucket
            path.append(f"{'L' if joined else 'M'}{px:.1f},{py:.1f}")
            previous = moment
            dots.append(
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5"><title>{escape(name)} '
                f"{moment:%Y-%m-%d %H:%M}: {rate * 100:.1f} % silent ({drawn_counts[1]} of "
                f"{drawn_counts[0]})</title></circle>"
            )
        if path:
            out.append(
                f'<g stroke="{color[name]}" fill="{color[name]}">'
                f'<path d="{" ".join(path)}" fill="none" stroke-width="2"/>'
                f"{''.join(dots)}</g>"
            )

    # legend, in words
    out.append('<g fill="currentColor">')
    for i, name in enumerate(drawn):
        y = TOP + 4 + i * 20
        share = totals.get(name, sum(totals[n] for n in names if n not in drawn[:-1]))
        out.append(
            f'<rect x="{LEFT + plot_width + 16}" y="{y - 9}" width="12" height="12" '
            f'fill="{color[name]}"/><text x="{LEFT + plot_width + 34}" y="{y + 1}">'
            f"{escape(name)} ({share:,} streams)</text>"
        )
    if not drawn:
        out.append(
            f'<text x="{LEFT + plot_width / 2}" y="{TOP + RATE_HEIGHT / 2}" '
            f'text-anchor="middle">No streams in this window</text>'
        )
    out.append("</g></svg>")
    return "".join(out)
