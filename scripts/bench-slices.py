#!/usr/bin/env python3
"""bench-slices.py: what sampling costs a .NET process, resolved within one run.

bench-service.sh compares fresh processes and whole runs; on this VM two runs differ by several per
cent, more than the costs measured. Here one process runs the whole time with each profiler
attached in turn, while its sampling is switched off and on in slices of SLICE seconds (spanprof
record: SIGUSR1 / SIGUSR2; perf record: --control disable / enable). Each "on" slice is compared
with the mean of the "off" slices either side of it, so a drift slower than a slice cancels. The
arm `none` switches nothing: its "on" slices are as unprofiled as its "off" ones, so its interval
is the method's own noise floor.

TARGET=loop (default): SpanLoop, a CPU-bound load whose work per unit is fixed (a span, a compute
chunk, an await onto the thread pool, a chunk; CHUNK_US each). TARGET=service: SpanService under
LoadGen, where the work per request itself varies by 10-20 % from one second to the next, so the
slices resolve far less. TARGET=handoff: SpanLoop --handoff, threads handing work to each other
through a ring (HANDOFF_THREADS, a span and a CHUNK_US chunk per hand-off, default 10 us), about
30,000 blocks and wake-ups a second on one CPU: what --off-cpu costs.

What a switch leaves running is not in the figures: the hook and perf maps (chosen at start),
spanprof's process-event programs (exec and the span table's mmap), the profiler's idle poll.
Arms: none, spanprof (record -F HZ), spanprof-offcpu (the same with --off-cpu: pausing detaches
the off-CPU programs too), base-offcpu (the same with another build's spanprof, BASE=path: two
builds side by side in one run), offcpu-elsewhere and base-offcpu-elsewhere (the two with
--off-cpu of an idle process: what the target pays as a process not profiled), offcpu-places
(spanprof-offcpu with every block's stacks from its place, as without rseq_update),
offcpu-floor (spanprof-offcpu with an off-CPU program that returns
at once: the floor of an attached sched_switch program), offcpu-times (one that only times blocks:
no place, stacks or span), offcpu-no-place, offcpu-no-span and offcpu-no-end (the whole program
less the place check, the span read or the switch-in that ends a block), spanprof-floor (spanprof
with every part of the sampler off: the perf event and an all but empty program), agent (at its defaults, 19 Hz, writing to a
directory), perf (record -F HZ -g), dotnet-trace (sampled thread time).
bench-service.sh measures those, coarsely.

Figures per arm, as ratios on/off (median and mean with its 95 % interval over the slice pairs):
  rate         units (or requests) per second, from the load's --progress lines, interpolated
               at the slice edges
  cpu          the process's CPU per unit (its cpuacct cgroup: ns, every thread, the BPF
               program's run time included, since it runs in the sampled task's interrupt)
  machine-cpu  the process's plus the profiler's CPU (its own cgroup) per unit
Two arms are compared by the 95 % interval of the difference of their means (Welch), beside
each arm's own interval. RAW=file.json keeps every slice pair's ratios; POOL="a.json b.json"
runs nothing and prints the figures and bars of those runs' slice pairs taken together (runs at
the same frequency and target). A pair whose two "off" slices differ by more than DISTURBED
(0.10: 10 %) in machine CPU per unit was disturbed from outside: it is dropped, and counted.

  BUILD=build ARMS="none spanprof agent perf dotnet-trace" ROUNDS=4 PAIRS=20 SLICE=2 HZ=99 \
      scripts/bench-slices.py          (the defaults; about 35 minutes)
Nothing passes or fails on a figure; a run that cannot be made exits 1.
"""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = os.environ
BUILD = os.path.join(ROOT, ENV.get("BUILD", "build"))
ARMS = ENV.get("ARMS", "none spanprof agent perf dotnet-trace").split()
ROUNDS = int(ENV.get("ROUNDS", "4"))
PAIRS = int(ENV.get("PAIRS", "20"))
SLICE = float(ENV.get("SLICE", "2"))
GUARD = float(ENV.get("GUARD", "0.1"))	# seconds after a switch left out of the slice
DISTURBED = float(ENV.get("DISTURBED", "0.10"))	# off slices this far apart: a disturbed pair
HZ = ENV.get("HZ", "99")
BASE = ENV.get("BASE", "")	# arm base-offcpu: this spanprof binary
TARGET = ENV.get("TARGET", "loop")	# loop: SpanLoop; service: SpanService under LoadGen; handoff
HANDOFF_THREADS = ENV.get("HANDOFF_THREADS", "4")
WARMUP = float(ENV.get("WARMUP", "15"))
CONCURRENCY = ENV.get("CONCURRENCY", "64")
CHUNK_US = ENV.get("CHUNK_US", "10" if TARGET == "handoff" else "100")
PATHS = ENV.get("PATHS", "/work/a,/work/b,/work/labels?tenant=acme")
CGROOT = "/sys/fs/cgroup/cpuacct"
T_CRIT = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
          10: 2.23, 15: 2.13, 20: 2.09, 30: 2.04, 60: 2.00}


def die(msg):
    print(f"bench-slices: {msg}", file=sys.stderr)
    sys.exit(1)


def t_crit(df):
    return T_CRIT[max(k for k in T_CRIT if k <= df)] if df >= 1 else float("nan")


class Cgroup:
    """A cpuacct cgroup (v1 here; v2's cpu.stat usage_usec elsewhere) whose CPU time is read in ns."""

    def __init__(self, name):
        self.v2 = not os.path.isdir(CGROOT)
        base = "/sys/fs/cgroup" if self.v2 else CGROOT
        self.path = os.path.join(base, f"spanprof-bench-{name}-{os.getpid()}")
        os.mkdir(self.path)

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def ns(self):
        if self.v2:
            with open(os.path.join(self.path, "cpu.stat")) as f:
                return int(re.search(r"usage_usec (\d+)", f.read()).group(1)) * 1000
        with open(os.path.join(self.path, "cpuacct.usage")) as f:
            return int(f.read())

    def remove(self):
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                left = f.read().split()
            for pid in left:	# back to the root group, so the directory can go
                with open(os.path.join(os.path.dirname(self.path), "cgroup.procs"), "w") as g:
                    g.write(pid)
            os.rmdir(self.path)
        except OSError:
            pass


class Progress:
    """LoadGen's --progress file: (CLOCK_MONOTONIC ns, requests so far), read as it grows."""

    def __init__(self, path):
        self.path, self.pts, self.off = path, [], 0

    def at(self, ns):
        with open(self.path) as f:
            f.seek(self.off)
            data = f.read()
        keep = data.rfind("\n") + 1
        self.off += keep
        for line in data[:keep].splitlines():
            t, n = line.split()
            self.pts.append((int(t), int(n)))
        pts = self.pts
        if len(pts) < 2 or pts[-1][0] < ns:
            return None
        lo, hi = 0, len(pts) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if pts[mid][0] <= ns else (lo, mid)
        (t0, n0), (t1, n1) = pts[lo], pts[hi]
        return n0 + (n1 - n0) * (ns - t0) / (t1 - t0) if t1 > t0 else n0


class Arm:
    """No profiler (`none`): the noise floor. A profiler arm overrides start(), on(), off(), stop().
    slice, guard, pairs: its slices' length, what is left out after each switch, how many pairs."""

    slice, guard, pairs = SLICE, GUARD, PAIRS

    def __init__(self, target, tmp):
        self.target, self.tmp, self.proc = target, tmp, None

    def start(self):
        return None	# the pid whose CPU is the profiler's, if any

    def on(self):
        pass

    def off(self):
        pass

    def stop(self):
        pass

    spawned = []	# every profiler process, ended at exit whatever happened

    def spawn(self, name, argv, env=None):
        self.log = open(os.path.join(self.tmp, f"{name}.txt"), "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        Arm.spawned.append(self.proc)
        return self.proc

    def logged(self):
        return open(self.log.name).read()

    def wait_for(self, cond, what):
        t0 = time.monotonic()
        while not cond():
            if time.monotonic() - t0 > 30:
                die(f"{what}: no answer within 30 s: {self.logged()[-2000:]}")
            if self.proc.poll() is not None:
                die(f"{what} exited: {self.logged()[-2000:]}")
            time.sleep(0.05)

    def interrupt(self, timeout=60):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            die(f"{self.proc.args[0]} did not stop within {timeout} s of SIGINT")


class Spanprof(Arm):
    """spanprof record -p PID -F HZ, attached throughout; SIGUSR1 pauses its sampling, SIGUSR2
    resumes it. SPANPROF_BPF_VARIANT (bpf/profiler.h) picks a sampler without some of its parts;
    only the test build (build/spanprof-test) reads it, so a variant runs that one."""

    def __init__(self, target, tmp, variant="", extra=(), binary=None, elsewhere=False):
        super().__init__(target, tmp)
        self.variant, self.extra = variant, list(extra)
        self.binary = binary or os.path.join(BUILD, "spanprof")
        # elsewhere: record profiles an idle process, not the target: what the target pays as a
        # process the profiler does not profile (its kernel hooks run at the target's switches)
        self.idle = subprocess.Popen(["sleep", "100000"]) if elsewhere else None

    def argv(self):
        binary = self.binary
        if self.variant and binary == os.path.join(BUILD, "spanprof"):
            binary = os.path.join(BUILD, "spanprof-test")	# variants: the test build only
        pid = self.idle.pid if self.idle else self.target
        return [binary, "record", "-p", str(pid), "-F", HZ,
                "-o", os.path.join(self.tmp, "slices.pb.gz")] + self.extra

    def start(self):
        env = dict(ENV, SPANPROF_BPF_VARIANT=self.variant)
        self.spawn("spanprof", self.argv(), env)
        self.wait_for(self.handles_sigusr1, "spanprof")	# a signal before that would end it
        time.sleep(3)	# attached, perf maps turned on, the first burst of reading over
        self.switch(signal.SIGUSR1, "paused")
        return self.proc.pid

    def handles_sigusr1(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            caught = int(re.search(r"SigCgt:\s*([0-9a-f]+)", f.read()).group(1), 16)
        return caught & (1 << (signal.SIGUSR1 - 1))

    def switch(self, sig, said):
        if getattr(self, "said", None) == said:
            return	# already so: record would say nothing
        self.said = said
        n0 = self.logged().count(said)
        self.proc.send_signal(sig)
        self.wait_for(lambda: self.logged().count(said) > n0, "spanprof")

    def on(self):
        self.switch(signal.SIGUSR2, "resumed")

    def off(self):
        self.switch(signal.SIGUSR1, "paused")

    def stop(self):
        self.interrupt()
        if self.idle:
            self.idle.kill()
            self.idle.wait()


class Agent(Spanprof):
    """spanprof agent at its defaults (19 Hz, every .NET process, 15 s windows), writing its windows
    to a directory; switched like record."""

    def argv(self):
        out = os.path.join(self.tmp, "agent-out")
        os.makedirs(out, exist_ok=True)
        return [os.path.join(BUILD, "spanprof"), "agent", "--output-dir", out]


class Perf(Arm):
    """perf record -F HZ -g -p PID, started with its events off (-D -1), switched by --control."""

    def start(self):
        self.ctl, self.ack = os.path.join(self.tmp, "ctl"), os.path.join(self.tmp, "ack")
        for p in (self.ctl, self.ack):
            os.mkfifo(p)
        self.spawn("perf", ["perf", "record", "-F", HZ, "-g", "-p", str(self.target), "-D", "-1",
                            "--control", f"fifo:{self.ctl},{self.ack}", "-o", os.path.join(self.tmp, "perf.data")])
        self.ctl_f, self.ack_f = open(self.ctl, "w"), open(self.ack, "r")
        time.sleep(3)
        if self.proc.poll() is not None:
            die(f"perf exited: {self.logged()[-2000:]}")
        return self.proc.pid

    def command(self, cmd):
        self.ctl_f.write(cmd + "\n")
        self.ctl_f.flush()
        if self.ack_f.readline().strip("\x00 \n") != "ack":	# perf ends each with a NUL
            die(f"perf did not acknowledge '{cmd}'")

    def on(self):
        self.command("enable")

    def off(self):
        self.command("disable")

    def stop(self):
        self.interrupt()
        self.ctl_f.close()
        self.ack_f.close()
        for p in (self.ctl, self.ack):
            os.unlink(p)


class DotnetTrace(Arm):
    """dotnet-trace collect -p PID --profile dotnet-sampled-thread-time, one session per "on" slice
    (it has no pause; a background process ignores SIGINT, so --duration ends it). Its slices are
    longer: the guard leaves out the session's start, and the rundown at its end runs before the
    next "off" slice begins (off() waits for the tool to exit)."""

    slice = float(ENV.get("DT_SLICE", "8"))
    guard = float(ENV.get("DT_GUARD", "3"))
    pairs = int(ENV.get("DT_PAIRS", "3"))
    tool = os.path.join(BUILD, "tools/dotnet-trace/dotnet-trace")

    def __init__(self, target, tmp, prof_cg):
        super().__init__(target, tmp)
        self.prof_cg, self.n = prof_cg, 0

    def on(self):
        self.n += 1
        secs = int(self.guard + self.slice + 2)
        self.spawn("dotnet-trace", [self.tool, "collect", "-p", str(self.target), "--profile",
                                    "dotnet-sampled-thread-time", "--duration", f"00:00:00:{secs:02d}",
                                    "-o", os.path.join(self.tmp, f"trace{self.n}.nettrace")])
        self.prof_cg.add(self.proc.pid)

    def off(self):
        if self.proc:
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                die("dotnet-trace did not end after its --duration")
            if self.proc.returncode != 0:
                die(f"dotnet-trace failed: {self.logged()[-2000:]}")
            self.proc = None


# Arms of --off-cpu with a variant of its program (arm: SPANPROF_BPF_VARIANT): the floor of an
# attached sched_switch program, one that only times blocks, the whole less the place check, the
# span read or the switch-in.
OFFCPU_VARIANTS = {"offcpu-floor": "offcpu-floor", "offcpu-times": "offcpu-times",
                   "offcpu-no-place": "offcpu-no-place", "offcpu-no-span": "no-span",
                   "offcpu-no-end": "offcpu-no-end", "offcpu-places": "offcpu-places"}


def make_arm(name, target, tmp, prof_cg):
    if name == "none":
        return Arm(target, tmp)
    if name == "spanprof":
        return Spanprof(target, tmp)
    if name == "spanprof-offcpu":
        return Spanprof(target, tmp, extra=["--off-cpu"])
    if name in OFFCPU_VARIANTS:	# --off-cpu with a variant of its program (the test build)
        return Spanprof(target, tmp, OFFCPU_VARIANTS[name], extra=["--off-cpu"])
    if name == "base-offcpu":	# another build's spanprof (BASE=path), --off-cpu: A/B in one run
        return Spanprof(target, tmp, extra=["--off-cpu"], binary=BASE)
    if name == "offcpu-elsewhere":	# --off-cpu of another process: the target not profiled
        return Spanprof(target, tmp, extra=["--off-cpu"], elsewhere=True)
    if name == "base-offcpu-elsewhere":
        return Spanprof(target, tmp, extra=["--off-cpu"], binary=BASE, elsewhere=True)
    if name == "spanprof-floor":	# the sampler with every part off: the perf event and a call
        return Spanprof(target, tmp, "no-ustack,no-kstack,no-leaf,no-span,no-output")
    if name == "agent":
        return Agent(target, tmp)
    if name == "perf":
        return Perf(target, tmp)
    if name == "dotnet-trace":
        return DotnetTrace(target, tmp, prof_cg)
    raise ValueError(name)	# main() checked ARMS


def measure(arm, svc_cg, prof_cg, progress):
    """arm.pairs pairs of off and on slices and one more off slice: [(on?, units, svc ns, prof ns, s)]."""
    slices = []
    for i in range(2 * arm.pairs + 1):
        on = i % 2 == 1
        arm.on() if on else arm.off()
        t_switch = time.monotonic()
        time.sleep(arm.guard)
        a = (time.monotonic_ns(), svc_cg.ns(), prof_cg.ns())
        time.sleep(max(0.0, t_switch + arm.guard + arm.slice - time.monotonic()))
        b = (time.monotonic_ns(), svc_cg.ns(), prof_cg.ns())
        slices.append((on, a, b))
    arm.off()
    time.sleep(0.3)	# the load's next progress line is past the last edge
    out = []
    for on, a, b in slices:
        ra, rb = progress.at(a[0]), progress.at(b[0])
        if ra is None or rb is None or rb <= ra:
            die("the load's progress does not cover a slice (did it stop?)")
        out.append((on, rb - ra, b[1] - a[1], b[2] - a[2], (b[0] - a[0]) / 1e9))
    return out


def ratios(slices):
    """Per "on" slice, its figures over the mean of the two "off" slices beside it, and how far
    those two "off" slices are apart ("off-drift": after / before, machine CPU per unit)."""
    def figs(s):
        _, req, svc, prof, secs = s
        return {"rate": req / secs, "cpu": svc / req, "machine-cpu": (svc + prof) / req}
    out = []
    for i in range(1, len(slices) - 1, 2):
        on, before, after = figs(slices[i]), figs(slices[i - 1]), figs(slices[i + 1])
        pair = {k: on[k] / ((before[k] + after[k]) / 2) for k in on}
        pair["off-drift"] = after["machine-cpu"] / before["machine-cpu"]
        out.append(pair)
    return out


def undisturbed(results):
    """The slice pairs whose two "off" slices agree within DISTURBED. Both are unprofiled, so
    when they differ by more than that, something outside the arm (another program on the
    machine, the host) moved the baseline, and the pair says nothing about the profiler. The
    rule looks at the "off" slices only, never at the "on" slice it keeps or drops; each drop
    is counted. Pairs from runs before the rule (no "off-drift") are kept."""
    kept = {}
    for name, pairs in results.items():
        keep = [x for x in pairs if abs(x.get("off-drift", 1.0) - 1) <= DISTURBED]
        if len(keep) < len(pairs):
            print(f"bench-slices: {name}: {len(pairs) - len(keep)} of {len(pairs)} slice pairs "
                  f"dropped as disturbed (their off slices more than {DISTURBED * 100:g} % apart)")
        if len(keep) >= 2:
            kept[name] = keep
        else:
            print(f"bench-slices: {name}: fewer than 2 slice pairs left: no figures")
    return kept


def summary(xs):
    xs = sorted(xs)
    n = len(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else float("nan")
    return med, mean, t_crit(n - 1) * sd / math.sqrt(n), n


def at_most(a, b):
    """Whether interval a (a figure's 95 % interval) is at most interval b: met, NOT met, or not
    resolved when they overlap."""
    return "met" if a[1] <= b[0] else "NOT met" if a[0] > b[1] else "not resolved"


def difference(xs, ys, scale=1.0):
    """95 % interval of mean(xs) - scale * mean(ys), the two samples independent (slices of
    different arms never overlap in time): Welch's t with the Welch-Satterthwaite degrees of
    freedom. Two intervals that overlap can still differ; this is the test of the difference."""
    def mv(zs):
        m = sum(zs) / len(zs)
        return m, sum((z - m) ** 2 for z in zs) / (len(zs) - 1) / len(zs)
    (mx, vx), (my, vy) = mv(xs), mv(ys)
    vy *= scale * scale
    d = mx - scale * my
    se = math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(xs) - 1) + vy ** 2 / (len(ys) - 1)) if se > 0 else 1
    h = t_crit(int(df)) * se
    return d - h, d + h


def below(d):
    """A difference's interval: met when all of it is below zero."""
    return "met" if d[1] < 0 else "NOT met" if d[0] >= 0 else "not resolved"


def bars(results):
    """Issue 11's bars at this frequency, each decided from the intervals."""
    def over(name, k="machine-cpu"):
        _, mean, ci, _ = summary([x[k] for x in results[name]])
        return mean - 1 - ci, mean - 1 + ci

    def pct(iv):
        return f"[{iv[0] * 100:+.2f}, {iv[1] * 100:+.2f}] %"
    if "spanprof" not in results:
        return
    def mc(name):
        return [x["machine-cpu"] - 1 for x in results[name]]
    sp = over("spanprof")
    if "dotnet-trace" in results:
        dt = over("dotnet-trace")
        d = difference(mc("spanprof"), mc("dotnet-trace"), 0.1)
        print(f"bench-slices: bar: spanprof's machine CPU overhead {pct(sp)} <= 1/10 of dotnet-trace's "
              f"{pct(dt)}: intervals {at_most(sp, (dt[0] / 10, dt[1] / 10))}; "
              f"the difference {pct(d)}: {below(d)}")
    if "perf" in results:
        pf = over("perf")
        d = difference(mc("spanprof"), mc("perf"))
        print(f"bench-slices: bar: spanprof's {pct(sp)} below perf's {pct(pf)}: intervals "
              f"{at_most(sp, pf)}; the difference {pct(d)}: {below(d)}")
    lo, hi = (1 + x for x in over("spanprof", "rate"))
    print(f"bench-slices: bar: spanprof's throughput ratio [{lo:.4f}, {hi:.4f}] >= 0.99: "
          f"{'met' if lo >= 0.99 else 'NOT met' if hi < 0.99 else 'not resolved'}")
    if "spanprof-offcpu" in results:	# issue 31
        lo, hi = (1 + x for x in over("spanprof-offcpu", "rate"))
        print(f"bench-slices: bar: spanprof --off-cpu's throughput ratio [{lo:.4f}, {hi:.4f}] >= 0.98: "
              f"{'met' if lo >= 0.98 else 'NOT met' if hi < 0.98 else 'not resolved'}")


def start_target(tmp, prog, duration, procs):
    """The profiled .NET process on CPU 1, hook and perf maps on, counting its work into prog."""
    env = dict(ENV, DOTNET_STARTUP_HOOKS=os.path.join(BUILD, "hook/SpanProf.Hook.dll"), DOTNET_PerfMapEnabled="1")
    log = open(os.path.join(tmp, "load.log"), "w")
    if TARGET in ("loop", "handoff"):
        mode = ["--handoff", "--workers", HANDOFF_THREADS] if TARGET == "handoff" else []
        loop = subprocess.Popen(["taskset", "-c", "1", "dotnet", os.path.join(BUILD, "apps/SpanLoop/SpanLoop.dll")] +
                                mode + ["--chunk-us", CHUNK_US, "--duration", str(duration), "--progress", prog],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append(loop)
        if TARGET == "handoff":
            return loop.pid, (f"SpanLoop --handoff (hook, perf maps, {HANDOFF_THREADS} threads in a ring, "
                              f"a span and a {CHUNK_US} us chunk per hand-off) on CPU 1")
        return loop.pid, f"SpanLoop (hook, perf maps, 1 worker, 2 chunks of {CHUNK_US} us per span) on CPU 1"
    env.update(SPANSERVICE_READY=os.path.join(tmp, "ready.json"), SPANSERVICE_CHUNK_US=CHUNK_US, SPANSERVICE_BG_DUTY="0")
    svc = subprocess.Popen(["taskset", "-c", "1", "dotnet", os.path.join(BUILD, "apps/SpanService/SpanService.dll"),
                            "--port", "0"], env=env, stdout=log, stderr=subprocess.STDOUT)
    procs.append(svc)
    for _ in range(300):
        if os.path.exists(env["SPANSERVICE_READY"]) and os.path.getsize(env["SPANSERVICE_READY"]):
            break
        time.sleep(0.1)
    else:
        die("SpanService not ready: " + open(log.name).read()[-2000:])
    port = re.search(r'"port":(\d+)', open(env["SPANSERVICE_READY"]).read()).group(1)
    gen = subprocess.Popen(["taskset", "-c", "0", "dotnet", os.path.join(BUILD, "apps/LoadGen/LoadGen.dll"),
                            "--url", f"http://127.0.0.1:{port}", "--concurrency", CONCURRENCY,
                            "--duration", str(duration), "--paths", PATHS, "--progress", prog],
                           stdout=subprocess.DEVNULL, stderr=log)
    procs.append(gen)
    return svc.pid, (f"SpanService (hook, perf maps, --chunk-us {CHUNK_US}) on CPU 1 under LoadGen "
                     f"-c {CONCURRENCY} on CPU 0")


def report(results):
    """Every arm's figures, the bars, and the resolution the `none` arm gives."""
    results = undisturbed(results)
    for name in results:
        for k in ("rate", "cpu", "machine-cpu"):
            med, mean, ci, n = summary([x[k] for x in results[name]])
            print(f"bench-slices: RESULT {name:<14} {k:<12} on/off median {med:.4f} mean {mean:.4f} "
                  f"±{ci * 100:.2f} % (95 %, {n} slice pairs)")
    bars(results)
    if "none" in results:
        floor = summary([x["machine-cpu"] for x in results["none"]])[2]
        print(f"bench-slices: resolution (the `none` arm's 95 % interval): ±{floor * 100:.2f} %; "
              f"issue 11 asks for 0.5 %: {'met' if floor <= 0.005 else 'NOT met'}")


def pool(files):
    """The slice pairs of several RAW files, arm by arm."""
    results, kind = {}, None
    for path in files:
        try:
            with open(path) as f:
                run = json.load(f)
            this = (run["hz"], run["target"])
            arms = run["results"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            die(f"{path}: not a RAW file of this script: {e}")
        if kind and this != kind:
            die(f"{path}: {this[0]} Hz, {this[1]}; the first file: {kind[0]} Hz, {kind[1]}")
        kind = this
        for name, pairs in arms.items():
            results.setdefault(name, []).extend(pairs)
    print(f"bench-slices: {len(files)} runs pooled, {kind[0]} Hz, target {kind[1]}")
    report(results)


def main():
    if ENV.get("POOL"):
        pool(ENV["POOL"].split())
        return
    if TARGET not in ("loop", "service", "handoff"):
        die(f"TARGET={TARGET}: loop, service or handoff")
    known = ("none", "spanprof", "spanprof-offcpu", "base-offcpu", "offcpu-elsewhere",
             "base-offcpu-elsewhere", "spanprof-floor", "agent", "perf", "dotnet-trace") + \
        tuple(OFFCPU_VARIANTS)
    for name in ARMS:	# before anything starts, not after the warm-up
        if name not in known:
            die(f"unknown arm {name} ({' '.join(known)})")
    if any(a.startswith("base-") for a in ARMS) and not os.access(BASE, os.X_OK):
        die("arm base-offcpu: BASE=path of another build's spanprof")
    for f in ("hook/SpanProf.Hook.dll", "apps/SpanLoop/SpanLoop.dll", "apps/SpanService/SpanService.dll",
              "apps/LoadGen/LoadGen.dll", "spanprof"):
        if not os.path.exists(os.path.join(BUILD, f)):
            die(f"{BUILD}/{f} missing: run make all apps")
    if "spanprof-floor" in ARMS and not os.path.exists(os.path.join(BUILD, "spanprof-test")):
        die(f"{BUILD}/spanprof-test missing (the arm spanprof-floor runs it): run make tools")
    if "perf" in ARMS and not shutil.which("perf"):
        die("perf missing (apt-get install linux-perf)")
    if "dotnet-trace" in ARMS and not os.access(DotnetTrace.tool, os.X_OK):
        print(f"bench-slices: installing dotnet-trace into {os.path.dirname(DotnetTrace.tool)} (local NuGet feed)")
        if subprocess.run(["dotnet", "tool", "install", "--tool-path", os.path.dirname(DotnetTrace.tool),
                           "dotnet-trace"], stdout=subprocess.DEVNULL).returncode:
            die("dotnet tool install dotnet-trace failed")
    if os.cpu_count() < 2:
        die("needs 2 CPUs: the service on CPU 1, LoadGen on CPU 0")
    tmp = tempfile.mkdtemp(prefix="bench-slices.")
    procs, cgs = [], []
    try:
        svc_cg, prof_cg = Cgroup("svc"), Cgroup("prof")
        cgs += [svc_cg, prof_cg]
        per_arm = 3 + (2 * PAIRS + 1) * (SLICE + GUARD + 0.05) + 5
        if "dotnet-trace" in ARMS:
            per_arm += (2 * DotnetTrace.pairs + 1) * (DotnetTrace.slice + DotnetTrace.guard + 3)
        duration = min(3600, 30 + ROUNDS * len(ARMS) * per_arm * 1.5)
        prog = os.path.join(tmp, "progress")
        target, desc = start_target(tmp, prog, duration, procs)
        svc_cg.add(target)
        time.sleep(WARMUP)	# JIT and tiering settle
        if not os.path.exists(prog) or any(p.poll() is not None for p in procs):
            die("the load is not running: " + open(os.path.join(tmp, "load.log")).read()[-2000:])
        progress = Progress(prog)
        print(f"bench-slices: machine {os.cpu_count()} CPUs, kernel {os.uname().release}; {desc}; "
              f"{HZ} Hz; {ROUNDS} rounds of {PAIRS} pairs of {SLICE:g} s slices per arm", flush=True)
        results = {a: [] for a in ARMS}
        for r in range(ROUNDS):
            order = ARMS[r % len(ARMS):] + ARMS[:r % len(ARMS)]
            for name in order:
                arm = make_arm(name, target, tmp, prof_cg)
                pid = arm.start()
                if pid:
                    prof_cg.add(pid)
                s = measure(arm, svc_cg, prof_cg, progress)
                arm.stop()
                rs = ratios(s)
                results[name] += rs
                med = summary([x["machine-cpu"] for x in rs])
                print(f"bench-slices: round {r + 1} {name:<14} machine CPU per unit on/off "
                      f"median {med[0]:.4f}, mean {med[1]:.4f} ±{med[2] * 100:.2f} %", flush=True)
                if ENV.get("VERBOSE"):
                    for x in s:
                        print("bench-slices:   slice", "on " if x[0] else "off", x[1:], flush=True)
        report(results)
        if ENV.get("RAW"):	# every slice pair's ratios, to recompute or compare runs
            with open(ENV["RAW"], "w") as f:
                json.dump({"hz": HZ, "target": TARGET, "results": results}, f)
    finally:
        procs = Arm.spawned + procs
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        for c in cgs:
            c.remove()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
