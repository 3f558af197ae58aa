// Program.cs: LoadGen, a closed-loop HTTP/1.1 load generator that prints one JSON line of results.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Net;
using System.Net.Http;
using System.Text.Json;
using System.Threading;
using System.Threading.Tasks;

namespace LoadGen;

public static class Program
{
    private const string Usage =
        "usage: LoadGen --url http://127.0.0.1:PORT[,URL...] [--concurrency N] [--duration SEC] [--warmup SEC]\n" +
        "               [--paths /a,/b?x=1] [--max-requests N] [--timeout SEC] [--rate R] [--progress FILE]\n" +
        "               [--per-second FILE]\n" +
        "  Drives N concurrent closed-loop clients (each sends its next request when the last one ends),\n" +
        "  or with --rate, R requests per second in all, each client on its own schedule (light load),\n" +
        "  paths taken round-robin, for --warmup seconds unmeasured and then --duration seconds measured.\n" +
        "  Prints one JSON line. --progress: every 100 ms of the measured run, a line \"NS OK\" appended to\n" +
        "  FILE (CLOCK_MONOTONIC nanoseconds, successful requests so far), for benchmarks that cut the run\n" +
        "  into slices. Several URLs (comma-separated): client i sends to URL i mod their number.\n" +
        "  --per-second: at the end, one CSV line per wall-clock second of the measured run (by the time\n" +
        "  each request ended): unix_s,ok,errors,p50_ms,p99_ms,max_ms.\n" +
        "  Exit 0 if any measured request succeeded, 1 otherwise, 2 on bad usage.\n" +
        "  Only loopback targets are accepted.";

    public static async Task<int> Main(string[] args)
    {
        Settings s;
        try
        {
            s = Settings.Parse(args);
        }
        catch (ArgumentException e)
        {
            Console.Error.WriteLine($"loadgen: {e.Message}");
            Console.Error.WriteLine(Usage);
            return 2;
        }

        using var handler = new SocketsHttpHandler
        {
            MaxConnectionsPerServer = s.Concurrency,
            PooledConnectionLifetime = Timeout.InfiniteTimeSpan,
            PooledConnectionIdleTimeout = TimeSpan.FromMinutes(5),
            UseProxy = false,
            AllowAutoRedirect = false,
            AutomaticDecompression = DecompressionMethods.None,
        };
        using var client = new HttpClient(handler) { Timeout = TimeSpan.FromSeconds(s.TimeoutSec) };
        client.DefaultRequestVersion = HttpVersion.Version11;
        client.DefaultRequestHeaders.ConnectionClose = false;

        var run = new Run(s);
        if (s.WarmupSec > 0)
            await run.Phase(client, s.WarmupSec, record: false);
        Stopwatch wall = Stopwatch.StartNew();
        await run.Phase(client, s.DurationSec, record: true);
        double seconds = wall.Elapsed.TotalSeconds;

        Console.WriteLine(run.Report(seconds));
        if (s.PerSecondFile != null)
            System.IO.File.WriteAllText(s.PerSecondFile, run.PerSecond());
        return run.Ok > 0 ? 0 : 1;
    }
}

/* One measurement: per-worker latency lists (no sharing on the hot path), merged for the report. */
public sealed class Run
{
    private readonly Settings _s;
    private readonly List<Worker> _workers = new();
    private long _issued;

    public Run(Settings s) => _s = s;

    public long Ok => _workers.Sum(w => w.Ok);

    public async Task Phase(HttpClient client, double seconds, bool record)
    {
        using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(seconds));
        var workers = Enumerable.Range(0, _s.Concurrency).Select(i => new Worker(i, _s)).ToList();
        Task[] tasks = workers.Select(w => Task.Run(() => w.Loop(client, stop.Token, this))).ToArray();
        Task progress = record && _s.ProgressFile != null ? Progress(workers, stop.Token) : Task.CompletedTask;
        await Task.WhenAll(tasks);
        await progress;
        if (record)
            _workers.AddRange(workers);
    }

    /* --progress: the successful requests so far, every 100 ms. Each worker's count is its own
     * (read here without a lock: a count a moment old is still a count). */
    private Task Progress(List<Worker> workers, CancellationToken stop) =>
        ProgressFile.Write(_s.ProgressFile!, () => workers.Sum(w => w.Ok), stop);

    /* False once --max-requests have been issued in this run. */
    public bool TryIssue() => _s.MaxRequests == 0 || Interlocked.Increment(ref _issued) <= _s.MaxRequests;

    /* --per-second: requests by the wall-clock second they ended in (the Stopwatch is
     * CLOCK_MONOTONIC; one reading of both clocks maps it to Unix time). */
    public string PerSecond()
    {
        long mono = Stopwatch.GetTimestamp();
        double unixNow = DateTimeOffset.UtcNow.ToUnixTimeMilliseconds() / 1000.0;
        var buckets = new SortedDictionary<long, List<(double ms, bool ok)>>();
        foreach (Worker w in _workers)
            foreach (var e in w.Ends)
            {
                long sec = (long)Math.Floor(unixNow - (double)(mono - e.end) / Stopwatch.Frequency);
                if (!buckets.TryGetValue(sec, out var l))
                    buckets[sec] = l = new();
                l.Add((e.ms, e.ok));
            }
        var sb = new System.Text.StringBuilder("unix_s,ok,errors,p50_ms,p99_ms,max_ms\n");
        var inv = System.Globalization.CultureInfo.InvariantCulture;
        foreach (var (sec, l) in buckets)
        {
            var lat = l.Where(x => x.ok).Select(x => x.ms).OrderBy(x => x).ToList();
            double P(double q) => lat.Count == 0 ? 0 : lat[Math.Clamp((int)Math.Ceiling(q * lat.Count) - 1, 0, lat.Count - 1)];
            sb.Append(string.Format(inv, "{0},{1},{2},{3:F3},{4:F3},{5:F3}\n", sec, lat.Count, l.Count - lat.Count,
                P(0.50), P(0.99), lat.Count == 0 ? 0 : lat[^1]));
        }
        return sb.ToString();
    }

    public string Report(double seconds)
    {
        var lat = new List<double>();
        var perPath = new Dictionary<string, (long ok, long err)>();
        var errors = new Dictionary<string, long>();
        long ok = 0, err = 0;
        foreach (Worker w in _workers)
        {
            lat.AddRange(w.LatenciesMs);
            ok += w.Ok;
            err += w.Err;
            foreach (var kv in w.PerPath)
            {
                perPath.TryGetValue(kv.Key, out var t);
                perPath[kv.Key] = (t.ok + kv.Value.ok, t.err + kv.Value.err);
            }
            foreach (var kv in w.Errors)
                errors[kv.Key] = errors.GetValueOrDefault(kv.Key) + kv.Value;
        }
        lat.Sort();
        double P(double q) => lat.Count == 0 ? 0 : lat[Math.Clamp((int)Math.Ceiling(q * lat.Count) - 1, 0, lat.Count - 1)]; /* nearest rank */
        var report = new Dictionary<string, object>
        {
            ["url"] = string.Join(",", _s.Urls.Select(u => u.ToString().TrimEnd('/'))),
            ["concurrency"] = _s.Concurrency,
            ["duration_s"] = Math.Round(seconds, 3),
            ["requests"] = ok + err,
            ["ok"] = ok,
            ["errors"] = err,
            ["rps"] = Math.Round(ok / seconds, 1),
            ["latency_ms"] = new Dictionary<string, double>
            {
                ["p50"] = Math.Round(P(0.50), 3),
                ["p90"] = Math.Round(P(0.90), 3),
                ["p99"] = Math.Round(P(0.99), 3),
                ["max"] = Math.Round(lat.Count == 0 ? 0 : lat[^1], 3),
                ["mean"] = Math.Round(lat.Count == 0 ? 0 : lat.Average(), 3),
            },
            ["paths"] = perPath.ToDictionary(kv => kv.Key, kv => new Dictionary<string, long> { ["ok"] = kv.Value.ok, ["errors"] = kv.Value.err }),
            ["error_kinds"] = errors,
        };
        return JsonSerializer.Serialize(report);
    }
}

/* One closed-loop client. Latency counts successful requests only, measured to the end of the body. */
public sealed class Worker
{
    private readonly int _id;
    private readonly Settings _s;

    public List<double> LatenciesMs { get; } = new();
    /* With --per-second: every request's end (Stopwatch ticks), latency and outcome. */
    public List<(long end, double ms, bool ok)> Ends { get; } = new();
    public Dictionary<string, (long ok, long err)> PerPath { get; } = new();
    public Dictionary<string, long> Errors { get; } = new();
    public long Ok { get; private set; }
    public long Err { get; private set; }

    public Worker(int id, Settings s)
    {
        _id = id;
        _s = s;
    }

    public async Task Loop(HttpClient client, CancellationToken stop, Run run)
    {
        int next = _id % _s.Paths.Length; /* stagger the paths across workers */
        Uri baseUrl = _s.Urls[_id % _s.Urls.Length];
        /* --rate: this client's share of R requests/s, each on its own schedule (not after the last
         * answer), so a slow answer does not lower the offered load. */
        double period = _s.Rate > 0 ? _s.Concurrency / _s.Rate : 0;
        long due = Stopwatch.GetTimestamp();
        while (!stop.IsCancellationRequested && run.TryIssue())
        {
            if (period > 0)
            {
                due += (long)(period * Stopwatch.Frequency);
                TimeSpan wait = Stopwatch.GetElapsedTime(Stopwatch.GetTimestamp(), due);
                if (wait > TimeSpan.Zero)
                {
                    try { await Task.Delay(wait, stop); }
                    catch (OperationCanceledException) { break; }
                }
            }
            string path = _s.Paths[next];
            next = (next + 1) % _s.Paths.Length;
            long t0 = Stopwatch.GetTimestamp();
            string? error = null;
            try
            {
                using HttpResponseMessage resp = await client.GetAsync(new Uri(baseUrl, path), HttpCompletionOption.ResponseContentRead, stop);
                if (!resp.IsSuccessStatusCode)
                    error = $"http_{(int)resp.StatusCode}";
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested)
            {
                break; /* the phase ended mid-request: neither a success nor an error */
            }
            catch (Exception e) when (e is HttpRequestException || e is TaskCanceledException || e is System.IO.IOException)
            {
                error = e is TaskCanceledException ? "timeout" : e.GetType().Name;
            }
            long t1 = Stopwatch.GetTimestamp();
            double ms = Stopwatch.GetElapsedTime(t0, t1).TotalMilliseconds;
            if (_s.PerSecondFile != null)
                Ends.Add((t1, ms, error == null));
            PerPath.TryGetValue(path, out var t);
            if (error == null)
            {
                Ok++;
                LatenciesMs.Add(ms);
                PerPath[path] = (t.ok + 1, t.err);
            }
            else
            {
                Err++;
                PerPath[path] = (t.ok, t.err + 1);
                Errors[error] = Errors.GetValueOrDefault(error) + 1;
                if (error != "timeout")
                    await Task.Delay(10, CancellationToken.None); /* a refused connection must not spin */
            }
        }
    }
}

public sealed class Settings
{
    public Uri[] Urls { get; private set; } = { new("http://127.0.0.1:5080") };
    public string? PerSecondFile { get; private set; }
    public int Concurrency { get; private set; } = 50;
    public double DurationSec { get; private set; } = 10;
    public double WarmupSec { get; private set; }
    public string[] Paths { get; private set; } = { "/healthz" };
    public long MaxRequests { get; private set; }
    public double TimeoutSec { get; private set; } = 30;
    public double Rate { get; private set; } /* requests/s in all; 0: closed loop */
    public string? ProgressFile { get; private set; }

    public static Settings Parse(string[] args)
    {
        var s = new Settings();
        for (int i = 0; i < args.Length; i++)
        {
            string a = args[i];
            string Value() => i + 1 < args.Length ? args[++i] : throw new ArgumentException($"{a} needs a value");
            switch (a)
            {
                case "--url":
                    var urls = new List<Uri>();
                    foreach (string one in Value().Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries))
                    {
                        if (!Uri.TryCreate(one, UriKind.Absolute, out Uri? u) || u.Scheme != "http")
                            throw new ArgumentException("--url must be an absolute http:// URL");
                        if (!u.IsLoopback)
                            throw new ArgumentException($"--url must be a loopback address (got {u.Host})");
                        urls.Add(u);
                    }
                    if (urls.Count == 0)
                        throw new ArgumentException("--url needs a URL");
                    s.Urls = urls.ToArray();
                    break;
                case "--concurrency": s.Concurrency = (int)Number(Value(), a, 1, 10_000); break;
                case "--duration": s.DurationSec = Number(Value(), a, 0.1, 3600); break;
                case "--warmup": s.WarmupSec = Number(Value(), a, 0, 3600); break;
                case "--max-requests": s.MaxRequests = (long)Number(Value(), a, 0, 1e12); break;
                case "--timeout": s.TimeoutSec = Number(Value(), a, 0.1, 3600); break;
                case "--rate": s.Rate = Number(Value(), a, 0.01, 1e6); break;
                case "--progress": s.ProgressFile = Value(); break;
                case "--per-second": s.PerSecondFile = Value(); break;
                case "--paths":
                    s.Paths = Value().Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);
                    if (s.Paths.Length == 0 || s.Paths.Any(p => !p.StartsWith('/')))
                        throw new ArgumentException("--paths: comma-separated paths, each starting with '/'");
                    break;
                case "-h": case "--help": throw new ArgumentException("help");
                default: throw new ArgumentException($"unknown argument '{a}'");
            }
        }
        return s;
    }

    private static double Number(string s, string what, double min, double max)
    {
        if (!double.TryParse(s, System.Globalization.NumberStyles.Float, System.Globalization.CultureInfo.InvariantCulture, out double v) || v < min || v > max)
            throw new ArgumentException($"{what}: expected a number in [{min}, {max}], got '{s}'");
        return v;
    }
}
