// Program.cs: SpanService, an ASP.NET Core minimal API whose requests do known CPU work in known spans.
using System;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Linq.Expressions;
using System.Text.Json;
using System.Threading;
using System.Threading.Tasks;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using OpenTelemetry;
using OpenTelemetry.Resources;
using OpenTelemetry.Trace;

namespace SpanService;

public static class Program
{
    public const string SourceName = "SpanService";
    private static readonly ActivitySource Source = new(SourceName);

    public static async Task<int> Main(string[] args)
    {
        Options opt;
        try
        {
            opt = Options.Parse(args);
        }
        catch (ArgumentException e)
        {
            Console.Error.WriteLine($"spanservice: {e.Message}");
            Console.Error.WriteLine(Options.Usage);
            return 2;
        }

        HotWork.Iters = opt.Iters > 0 ? opt.Iters : HotWork.Calibrate(opt.ChunkUs);
        HotWork.JitAll();

        var builder = WebApplication.CreateBuilder(opt.AspNetArgs);
        builder.Logging.ClearProviders();
        builder.Logging.AddConsole();
        builder.Logging.SetMinimumLevel(LogLevel.Warning);
        if (opt.Urls == null)
            builder.WebHost.UseUrls($"http://127.0.0.1:{opt.Port}");
        else
            builder.WebHost.UseUrls(opt.Urls);

        var info = new SpanInfoProcessor();
        SpanFileExporter? exporter = opt.SpansPath != null ? new SpanFileExporter(opt.SpansPath) : null;
        builder.Services.AddOpenTelemetry()
            // The name the app gives itself in code (SPANSERVICE_SERVICE_NAME, else "SpanService"):
            // in the .NET SDK it wins over OTEL_SERVICE_NAME.
            .ConfigureResource(r => r.AddService(Environment.GetEnvironmentVariable("SPANSERVICE_SERVICE_NAME") is { Length: > 0 } name ? name : SourceName))
            .WithTracing(t =>
            {
                t.SetSampler(new AlwaysOnSampler())
                 .AddSource(SourceName)
                 .AddAspNetCoreInstrumentation(o => o.Filter = ctx => ctx.Request.Path != "/healthz")
                 .AddProcessor(info);
                if (exporter != null)
                    t.AddProcessor(new BatchActivityExportProcessor(exporter, maxQueueSize: 1 << 17,
                        scheduledDelayMilliseconds: 100, exporterTimeoutMilliseconds: 30_000, maxExportBatchSize: 4096));
            });
        var worker = new NoSpanWorker(opt.BackgroundDuty);
        builder.Services.AddHostedService(_ => worker);

        WebApplication app = builder.Build();
        /*
         * The ASP.NET instrumentation names the request span "GET" while the request runs and
         * "GET /work/a" only when it stops. Naming it from the route as soon as routing is done
         * means the local root name that a profiler reads during the handler is the final one.
         */
        app.Use((ctx, next) =>
        {
            if (Activity.Current is Activity a && a.Parent == null && ctx.GetEndpoint() is RouteEndpoint ep)
                a.DisplayName = $"{ctx.Request.Method} {ep.RoutePattern.RawText}";
            return next(ctx);
        });
        app.MapGet("/healthz", () => Results.Text("ok\n"));
        app.MapGet("/work/a", WorkA);
        app.MapGet("/work/b", WorkB);
        app.MapGet("/work/labels", WorkLabels);
        app.MapGet("/work/codegen", WorkCodegen);

        try
        {
            await app.StartAsync();
        }
        catch (Exception e) when (e is IOException || e is InvalidOperationException)
        {
            Console.Error.WriteLine($"spanservice: cannot start: {e.Message}");
            return 1;
        }
        string url = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()?.Addresses.FirstOrDefault() ?? "?";
        for (int i = 0; i < 100 && opt.BackgroundDuty > 0 && worker.Tid == 0; i++)
            Thread.Sleep(10);
        bool hookMapped = HookMapped();
        Console.WriteLine($"spanservice: listening on {url} pid={Environment.ProcessId} iters={HotWork.Iters} " +
                          $"background_tid={worker.Tid} hook_mapped={(hookMapped ? 1 : 0)} spans={opt.SpansPath ?? "-"}");
        if (opt.ReadyPath != null)
            WriteReady(opt.ReadyPath, url, worker.Tid, hookMapped, opt.SpansPath);

        await app.WaitForShutdownAsync();
        await app.DisposeAsync(); /* stops the tracer provider: the batch processor flushes every span */

        long dropped = exporter == null ? 0 : info.Ended - exporter.Written - exporter.Failed;
        Console.WriteLine($"spanservice: stopped spans_started={info.Started} spans_ended={info.Ended} " +
                          $"spans_written={exporter?.Written ?? 0} spans_write_failed={exporter?.Failed ?? 0} " +
                          $"spans_dropped={dropped} background_chunks={worker.Chunks} background_span_leaks={worker.SpanLeaks} " +
                          $"hook_mapped={(HookMapped() ? 1 : 0)}");
        return 0;
    }

    /* /work/a: request span -> "compute-a"; the span's work resumes after a yield and after a timer. */
    private static async Task<IResult> WorkA()
    {
        using Activity? span = Source.StartActivity("compute-a");
        SpanInfo.HereIn(span);
        HotWork.Keep(HotWork.HotA_InSpan(HotWork.Iters));
        await Task.Yield();
        SpanInfo.HereIn(span);
        HotWork.Keep(HotWork.HotA_InSpan(HotWork.Iters));
        await Task.Delay(1);
        SpanInfo.HereIn(span);
        HotWork.Keep(HotWork.HotA_InSpan(HotWork.Iters));
        return Results.Text("a\n");
    }

    /* /work/b: request span -> "outer-b" -> "inner-b", each with its own hot method, awaits between. */
    private static async Task<IResult> WorkB()
    {
        using (Activity? outer = Source.StartActivity("outer-b"))
        {
            SpanInfo.HereIn(outer);
            HotWork.Keep(HotWork.HotB_Outer(HotWork.Iters));
            await Task.Yield();
            using (Activity? inner = Source.StartActivity("inner-b"))
            {
                SpanInfo.HereIn(inner);
                HotWork.Keep(HotWork.HotB_Inner(HotWork.Iters));
                await Task.Delay(1);
                SpanInfo.HereIn(inner);
                HotWork.Keep(HotWork.HotB_Inner(HotWork.Iters));
            }
            await Task.Yield();
            SpanInfo.HereIn(outer);
            HotWork.Keep(HotWork.HotB_Outer(HotWork.Iters));
        }
        return Results.Text("b\n");
    }

    /* /work/codegen: request span -> "codegen"; compiles a new Expression (a DynamicMethod, jitted
     * once and collectible) and runs one chunk through it: an app that generates code all the
     * time, as compiled expressions, regexes and serializers do (scripts/bench-pod.sh). */
    private static long s_codegen;
    private static readonly System.Reflection.MethodInfo HotCodegen = typeof(HotWork).GetMethod(nameof(HotWork.HotCodegen))!;

    private static IResult WorkCodegen()
    {
        using Activity? span = Source.StartActivity("codegen");
        SpanInfo.HereIn(span);
        long seed = Interlocked.Increment(ref s_codegen);
        ParameterExpression n = Expression.Parameter(typeof(long), "n");
        Func<long, ulong> f = Expression.Lambda<Func<long, ulong>>(
            Expression.Call(HotCodegen, n, Expression.Constant(seed)), n).Compile();
        HotWork.Keep(f(HotWork.Iters));
        return Results.Text("codegen\n");
    }

    /* /work/labels?tenant=X: HotLabelled under label tenant=X (across an await), then HotUnlabelled outside it. */
    private static async Task<IResult> WorkLabels(string? tenant)
    {
        tenant ??= "default";
        if (tenant.Length == 0 || tenant.Length > 32 || !tenant.All(c => char.IsAsciiLetterOrDigit(c) || c == '-' || c == '_'))
            return Results.BadRequest("tenant: 1-32 of [A-Za-z0-9_-]\n");
        Activity? request = Activity.Current;
        SpanInfo.Of(request)?.AddLabel("tenant", tenant);
#if SPANPROF_HOOK
        using (new global::SpanProf.Label("tenant", tenant))
#endif
        {
            SpanInfo.HereIn(request);
            HotWork.Keep(HotWork.HotLabelled(HotWork.Iters));
            await Task.Yield();
            SpanInfo.HereIn(request);
            HotWork.Keep(HotWork.HotLabelled(HotWork.Iters));
        }
        await Task.Yield();
        SpanInfo.HereIn(request);
        HotWork.Keep(HotWork.HotUnlabelled(HotWork.Iters));
        return Results.Text("labels\n");
    }

    /* The hook's span table is a memfd named "spanprof-ctx"; its mapping shows it is loaded. */
    private static bool HookMapped()
    {
        try
        {
            return File.ReadLines("/proc/self/maps").Any(l => l.Contains("/memfd:spanprof-ctx", StringComparison.Ordinal));
        }
        catch (IOException)
        {
            return false;
        }
    }

    private static void WriteReady(string path, string url, int backgroundTid, bool hookMapped, string? spans)
    {
        // Source-generated (ReadyJson): the same JSON in Native AOT and trimmed builds (make shapes).
        string json = JsonSerializer.Serialize(new ReadyInfo(Environment.ProcessId, url, new Uri(url).Port, HotWork.Iters,
            backgroundTid, hookMapped, spans), ReadyJson.Default.ReadyInfo);
        string tmp = path + ".tmp";
        File.WriteAllText(tmp, json + "\n");
        File.Move(tmp, path, true);
    }

    internal sealed record ReadyInfo(int pid, string url, int port, long iters, int background_tid, bool hook_mapped, string? spans);
}

[System.Text.Json.Serialization.JsonSerializable(typeof(Program.ReadyInfo))]
internal sealed partial class ReadyJson : System.Text.Json.Serialization.JsonSerializerContext
{
}

/* Command line and environment settings. */
public sealed class Options
{
    public const string Usage =
        "usage: SpanService [--port N] [--urls URL] [--iters N] [--chunk-us N] [--background-duty PCT]\n" +
        "  env: SPANSERVICE_PORT, SPANSERVICE_SPANS=<jsonl path>, SPANSERVICE_READY=<json path>,\n" +
        "       SPANSERVICE_ITERS, SPANSERVICE_CHUNK_US (default 2000), SPANSERVICE_BG_DUTY (default 20)";

    public int Port { get; private set; } = 5080;
    public string? Urls { get; private set; }
    public long Iters { get; private set; }
    public int ChunkUs { get; private set; } = 2000;
    public int BackgroundDuty { get; private set; } = 20;
    public string? SpansPath { get; private set; }
    public string? ReadyPath { get; private set; }
    public string[] AspNetArgs { get; private set; } = Array.Empty<string>();

    public static Options Parse(string[] args)
    {
        var o = new Options();
        o.Port = (int)Number(Environment.GetEnvironmentVariable("SPANSERVICE_PORT"), "SPANSERVICE_PORT", 0, 65535, o.Port);
        o.Iters = Number(Environment.GetEnvironmentVariable("SPANSERVICE_ITERS"), "SPANSERVICE_ITERS", 0, 1L << 40, 0);
        o.ChunkUs = (int)Number(Environment.GetEnvironmentVariable("SPANSERVICE_CHUNK_US"), "SPANSERVICE_CHUNK_US", 1, 1_000_000, o.ChunkUs);
        o.BackgroundDuty = (int)Number(Environment.GetEnvironmentVariable("SPANSERVICE_BG_DUTY"), "SPANSERVICE_BG_DUTY", 0, 100, o.BackgroundDuty);
        o.SpansPath = NonEmpty(Environment.GetEnvironmentVariable("SPANSERVICE_SPANS"));
        o.ReadyPath = NonEmpty(Environment.GetEnvironmentVariable("SPANSERVICE_READY"));
        for (int i = 0; i < args.Length; i++)
        {
            string a = args[i];
            string Value() => i + 1 < args.Length ? args[++i] : throw new ArgumentException($"{a} needs a value");
            switch (a)
            {
                case "--port": o.Port = (int)Number(Value(), a, 0, 65535, 0); break;
                case "--urls": o.Urls = Value(); break;
                case "--iters": o.Iters = Number(Value(), a, 1, 1L << 40, 0); break;
                case "--chunk-us": o.ChunkUs = (int)Number(Value(), a, 1, 1_000_000, 0); break;
                case "--background-duty": o.BackgroundDuty = (int)Number(Value(), a, 0, 100, 0); break;
                case "-h": case "--help": throw new ArgumentException("help");
                default: throw new ArgumentException($"unknown argument '{a}'");
            }
        }
        if (o.Urls != null)
        {
            if (!Uri.TryCreate(o.Urls, UriKind.Absolute, out Uri? u) || u.Host != "127.0.0.1")
                throw new ArgumentException($"--urls must be http://127.0.0.1:PORT, got '{o.Urls}'");
        }
        return o;
    }

    private static string? NonEmpty(string? s) => string.IsNullOrEmpty(s) ? null : s;

    private static long Number(string? s, string what, long min, long max, long dflt)
    {
        if (string.IsNullOrEmpty(s))
            return dflt;
        if (!long.TryParse(s, out long v) || v < min || v > max)
            throw new ArgumentException($"{what}: expected an integer in [{min}, {max}], got '{s}'");
        return v;
    }
}
