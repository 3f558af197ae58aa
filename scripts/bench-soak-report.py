#!/usr/bin/env python3
"""bench-soak-report.py: the figures, bars and plot of a bench-soak.sh run, from its soak.csv.

  scripts/bench-soak-report.py --dir OUT [--interval 15] [--skip-min 10] [--stopped LINE]

Trend: least squares over the rows after --skip-min; the change it predicts over that span is
held against the residual spread (2 standard deviations) and a floor (1 % of the mean RSS, 2 fds):
PASS when it is within either. Windows: expected = the agent's run time / --interval, against
the windows built and the distinct window stamps written. Samples: at the end, from the agent's
`agent stopped` line (--stopped), received = exported + not profiled + every counted loss, and
sent = received; on every row, taken = sent + ring buffer and scratch losses. Writes soak.svg (no
matplotlib needed). Prints PASS/FAIL per bar; exits 0 either way.
"""
import argparse
import csv
import datetime
import math
import os
import re


def fit(xs, ys):
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    res = [y - (a + b * x) for x, y in zip(xs, ys)]
    sd = math.sqrt(sum(r * r for r in res) / (n - 2))
    return b, a, sd, sd / math.sqrt(sxx), my


def svg(path, rows, title, rollout_min):
    W, H, L, R, T, B = 900, 200, 70, 20, 30, 30
    mins = [float(r["minute"]) for r in rows]
    cpu = [0.0]
    for p, q in zip(rows, rows[1:]):
        dt = float(q["t_s"]) - float(p["t_s"])
        cpu.append(100 * (float(q["cpu_s"]) - float(p["cpu_s"])) / dt if dt > 0 else 0)
    panels = [("agent RSS (MiB)", [float(r["rss_kib"]) / 1024 for r in rows]),
              ("agent open fds", [float(r["fds"]) for r in rows]),
              ("agent CPU (% of one core, per interval)", cpu)]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H * len(panels) + 30}" '
           f'font-family="sans-serif" font-size="12">',
           f'<text x="{L}" y="18" font-size="14">spanprof agent soak: {title}</text>']
    xmax = max(mins) if mins and max(mins) > 0 else 1
    for k, (name, ys) in enumerate(panels):
        y0 = 30 + k * H
        lo, hi = min(ys), max(ys)
        if hi - lo < 1e-9:
            lo, hi = lo - 1, hi + 1
        pad = (hi - lo) * 0.1
        lo, hi = lo - pad, hi + pad
        X = lambda m: L + (W - L - R) * m / xmax
        Y = lambda v: y0 + T + (H - T - B) * (1 - (v - lo) / (hi - lo))
        out.append(f'<rect x="{L}" y="{y0 + T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>')
        out.append(f'<text x="{L}" y="{y0 + T - 6}">{name}</text>')
        for v in (lo + pad, (lo + hi) / 2, hi - pad):
            out.append(f'<text x="{L - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
        m = rollout_min
        while rollout_min > 0 and m < xmax:
            out.append(f'<line x1="{X(m):.1f}" y1="{y0 + T}" x2="{X(m):.1f}" y2="{y0 + H - B}" stroke="#e99" stroke-dasharray="4 3"/>')
            m += rollout_min
        step = max(1, int(xmax / 10))
        for t in range(0, int(xmax) + 1, step):
            out.append(f'<text x="{X(t):.1f}" y="{y0 + H - B + 14}" text-anchor="middle">{t}</text>')
        pts = " ".join(f"{X(x):.1f},{Y(v):.1f}" for x, v in zip(mins, ys))
        out.append(f'<polyline points="{pts}" fill="none" stroke="#2a6fbb" stroke-width="1.5"/>')
    out.append(f'<text x="{W / 2}" y="{H * len(panels) + 24}" text-anchor="middle">minutes since the agent '
               'started (dashed: rollouts)</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--interval", type=float, default=15)
    ap.add_argument("--skip-min", type=float, default=10)
    ap.add_argument("--rollout-min", type=float, default=10)
    ap.add_argument("--stopped", default="")
    ap.add_argument("--title", default="")
    o = ap.parse_args()
    with open(os.path.join(o.dir, "soak.csv")) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print("bench-soak: no rows")
        return
    last = rows[-1]
    verdict = lambda ok: "PASS" if ok else "FAIL"
    print(f"bench-soak: {len(rows)} rows over {float(last['minute']):.1f} min; processes started "
          f"{last['starts']}, exited {last['exits']}, pids reused {last['pids_reused']}")

    # Trends after the first minutes.
    tail = [r for r in rows if float(r["minute"]) >= o.skip_min]
    for key, name, unit, scale, floor in (("rss_kib", "RSS", "MiB", 1 / 1024, None), ("fds", "fds", "", 1, 2.0)):
        xs = [float(r["minute"]) for r in tail]
        ys = [float(r[key]) * scale for r in tail]
        fr = fit(xs, ys)
        if not fr:
            print(f"bench-soak: BAR {name} trend: too few rows after {o.skip_min:g} min: n/a")
            continue
        b, a, sd, se, mean = fr
        span = xs[-1] - xs[0]
        change = b * span
        fl = floor if floor is not None else 0.01 * mean
        ok = abs(change) <= max(2 * sd, fl)
        print(f"bench-soak: {name} after {o.skip_min:g} min: mean {mean:.2f}{unit and ' ' + unit}, min {min(ys):.2f}, "
              f"max {max(ys):.2f}; slope {b:+.4f}/min (+-{se:.4f}), {change:+.2f} over {span:.0f} min "
              f"({b * 1440:+.1f} per day); residual sd {sd:.2f}")
        print(f"bench-soak: BAR {name}: no trend (|{change:.2f}| <= max(2 x sd {2 * sd:.2f}, floor {fl:.2f})): {verdict(ok)}")
    first = float(rows[0]["cpu_s"]), float(rows[0]["t_s"])
    dt = float(last["t_s"]) - first[1]
    if dt > 0:
        print(f"bench-soak: agent CPU {100 * (float(last['cpu_s']) - first[0]) / dt:.2f} % of one core on average")

    # Windows: the written ones must tile the run, each starting where the one before ended.
    stamps = set()
    for root, _, files in os.walk(os.path.join(o.dir, "windows")):
        for fn in files:
            m = re.match(r"(\d{8}T\d{6}\.\d{3}Z)-(\d{8}T\d{6}\.\d{3}Z)", fn)
            if m and fn.endswith(".pb.gz"):
                stamps.add((m.group(1), m.group(2)))
    wins = sorted(stamps)
    gaps = sum(1 for p, q in zip(wins, wins[1:]) if q[0] != p[1])
    ts = lambda x: datetime.datetime.strptime(x, "%Y%m%dT%H%M%S.%fZ").timestamp()
    covered = ts(wins[-1][1]) - ts(wins[0][0]) if wins else 0
    expected = math.ceil(covered / o.interval - 0.01) if wins else 0	# the last one ends at the stop
    lost = int(last["export_failed"]) + int(last["export_dropped"])
    m = re.search(r"agent stopped: (\d+) windows", o.stopped)
    final = int(m.group(1)) if m else int(last["windows_built"])
    print(f"bench-soak: windows: {len(wins)} distinct written over {covered:.0f} s (expected {expected} of "
          f"{o.interval:g} s), gaps between them {gaps}; built by the agent {final}; export failed or dropped {lost}")
    print(f"bench-soak: BAR no window lost (written = expected = built, no gap, none failed): "
          f"{verdict(len(wins) == expected == final and gaps == 0 and lost == 0)}")

    # Samples.
    worst = max(abs(int(r["taken"]) - int(r["sent"]) - int(r["lost_ringbuf"]) - int(r["lost_scratch"])) for r in rows)
    print(f"bench-soak: samples by the last row: taken {last['taken']}, sent {last['sent']}, lost ring buffer "
          f"{last['lost_ringbuf']}, scratch {last['lost_scratch']}, received {last['received']}, exported "
          f"{last['exported']}, not profiled {last['not_profiled']}, other losses {last['lost_other']}; "
          f"largest |taken - sent - lost in BPF| on a row {worst}")
    m = re.search(r"(\d+) samples exported; sampler sent (\d+), lost (\d+) \(ring buffer full\) (\d+) \(scratch\); "
                  r"received (\d+), not profiled (\d+), malformed (\d+), out of memory (\d+), unencodable (\d+), "
                  r"left out (\d+)", o.stopped)
    if m:
        exp, sent, lrb, lsc, rec, notp, mal, oom, unenc, left = map(int, m.groups())
        gap = rec - (exp + notp + mal + oom + unenc + left)
        print(f"bench-soak: at the stop: sent {sent}, received {rec} = exported {exp} + not profiled {notp} + "
              f"malformed {mal} + out of memory {oom} + unencodable {unenc} + left out {left} + unaccounted {gap}; "
              f"lost in BPF {lrb + lsc}")
        print(f"bench-soak: BAR every sample accounted for (sent = received = exported + counted): "
              f"{verdict(gap == 0 and sent == rec and worst <= 2 * 19 * os.cpu_count())}")
    else:
        print("bench-soak: BAR every sample accounted for: n/a (no 'agent stopped' line)")
    svg(os.path.join(o.dir, "soak.svg"), rows, o.title, o.rollout_min)


if __name__ == "__main__":
    main()
