// SpanExport.cs: per-span bookkeeping (threads, labels, monotonic times) and the JSON-lines span file exporter.
using System;
using System.Buffers;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Text.Json;
using System.Threading;
using OpenTelemetry;

namespace SpanService;

/* What the service records about one span beyond what Activity keeps. */
public sealed class SpanInfo
{
    public const string Key = "spanservice.info";
    private const int MaxTids = 64;

    private readonly List<int> _tids = new(4);
    private Dictionary<string, string>? _labels;

    public long StartMonoNs { get; init; }
    public long EndMonoNs { get; set; }
    public string NameAtStart { get; init; } = "";

    public static SpanInfo? Of(Activity? a) => a?.GetCustomProperty(Key) as SpanInfo;

    /* Appends the current OS thread id: one entry per work segment, duplicates kept, in order. */
    public void AddCurrentThread()
    {
        int tid = Threads.CurrentTid;
        lock (_tids)
        {
            if (_tids.Count < MaxTids)
                _tids.Add(tid);
        }
    }

    public void AddLabel(string key, string value)
    {
        lock (_tids)
        {
            _labels ??= new Dictionary<string, string>();
            _labels[key] = value;
        }
    }

    public int[] Tids()
    {
        lock (_tids)
            return _tids.ToArray();
    }

    public KeyValuePair<string, string>[] Labels()
    {
        lock (_tids)
            return _labels == null ? Array.Empty<KeyValuePair<string, string>>() : new List<KeyValuePair<string, string>>(_labels).ToArray();
    }

    /* CLOCK_MONOTONIC in ns on Linux (Stopwatch's clock), the clock of bpf_ktime_get_ns(). */
    public static long MonoNowNs()
    {
        long ts = Stopwatch.GetTimestamp();
        return Stopwatch.Frequency == 1_000_000_000 ? ts : (long)(ts * (1e9 / Stopwatch.Frequency));
    }

    /* Records the current thread in the current span and every in-process ancestor of it. */
    public static void HereIn(Activity? a)
    {
        Of(a)?.AddCurrentThread();
        for (Activity? p = a?.Parent; p != null; p = p.Parent)
            Of(p)?.AddCurrentThread();
    }
}

/* Attaches SpanInfo at start and stamps the end; counts spans so drops in export can be seen. */
public sealed class SpanInfoProcessor : BaseProcessor<Activity>
{
    private long _started;
    private long _ended;

    public long Started => Interlocked.Read(ref _started);
    public long Ended => Interlocked.Read(ref _ended);

    public override void OnStart(Activity a)
    {
        a.SetCustomProperty(SpanInfo.Key, new SpanInfo { StartMonoNs = SpanInfo.MonoNowNs(), NameAtStart = a.DisplayName });
        Interlocked.Increment(ref _started);
    }

    public override void OnEnd(Activity a)
    {
        SpanInfo? info = SpanInfo.Of(a);
        if (info != null)
            info.EndMonoNs = SpanInfo.MonoNowNs();
        Interlocked.Increment(ref _ended);
    }
}

/*
 * Writes one JSON object per ended span, one per line, to a file. Runs on the batch processor's
 * export thread; every batch is written and flushed to the kernel before Export returns, so a
 * reader sees whole lines only (a line is never split across two writes of the batch buffer).
 */
public sealed class SpanFileExporter : BaseExporter<Activity>
{
    private static readonly long UnixEpochTicks = DateTime.UnixEpoch.Ticks;

    private readonly FileStream _file;
    private readonly ArrayBufferWriter<byte> _buf = new(1 << 16);
    private readonly Utf8JsonWriter _json;
    private long _written;
    private long _failed;

    public long Written => Interlocked.Read(ref _written);
    public long Failed => Interlocked.Read(ref _failed);
    public string Path { get; }

    public SpanFileExporter(string path)
    {
        Path = path;
        _file = new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.ReadWrite | FileShare.Delete, 1);
        _json = new Utf8JsonWriter(_buf, new JsonWriterOptions { SkipValidation = false });
    }

    public override ExportResult Export(in Batch<Activity> batch)
    {
        _buf.Clear();
        long n = 0;
        foreach (Activity a in batch)
        {
            _json.Reset(_buf);
            WriteSpan(a);
            _json.Flush();
            _buf.Write("\n"u8);
            n++;
        }
        try
        {
            _file.Write(_buf.WrittenSpan);
            _file.Flush();
            Interlocked.Add(ref _written, n);
            return ExportResult.Success;
        }
        catch (IOException e)
        {
            Interlocked.Add(ref _failed, n);
            Console.Error.WriteLine($"spanservice: span file write failed: {e.Message}");
            return ExportResult.Failure;
        }
    }

    private void WriteSpan(Activity a)
    {
        Activity root = a;
        while (root.Parent != null)
            root = root.Parent;
        SpanInfo? info = SpanInfo.Of(a);
        long startUnixNs = (a.StartTimeUtc.Ticks - UnixEpochTicks) * 100;

        Utf8JsonWriter w = _json;
        w.WriteStartObject();
        w.WriteString("trace_id", a.TraceId.ToHexString());
        w.WriteString("span_id", a.SpanId.ToHexString());
        if (a.ParentSpanId == default)
            w.WriteNull("parent_span_id");
        else
            w.WriteString("parent_span_id", a.ParentSpanId.ToHexString());
        w.WriteString("name", a.DisplayName);
        w.WriteString("name_at_start", info?.NameAtStart ?? "");
        w.WriteString("operation_name", a.OperationName);
        w.WriteString("source", a.Source.Name);
        w.WriteString("kind", a.Kind.ToString());
        w.WriteString("local_root_span_id", root.SpanId.ToHexString());
        w.WriteString("local_root_name", root.DisplayName);
        w.WriteNumber("start_unix_ns", startUnixNs);
        w.WriteNumber("end_unix_ns", startUnixNs + a.Duration.Ticks * 100);
        w.WriteNumber("start_mono_ns", info?.StartMonoNs ?? 0);
        w.WriteNumber("end_mono_ns", info?.EndMonoNs ?? 0);
        w.WriteNumber("pid", Environment.ProcessId);
        w.WriteStartArray("tids");
        if (info != null)
            foreach (int tid in info.Tids())
                w.WriteNumberValue(tid);
        w.WriteEndArray();
        w.WriteStartObject("labels");
        if (info != null)
            foreach (KeyValuePair<string, string> kv in info.Labels())
                w.WriteString(kv.Key, kv.Value);
        w.WriteEndObject();
        string? path = a.GetTagItem("url.path") as string;
        if (path != null)
            w.WriteString("url_path", path);
        w.WriteEndObject();
    }

    protected override bool OnShutdown(int timeoutMilliseconds)
    {
        try
        {
            _file.Flush(true);
        }
        catch (IOException e)
        {
            Console.Error.WriteLine($"spanservice: span file flush failed: {e.Message}");
        }
        _file.Dispose();
        return true;
    }
}
