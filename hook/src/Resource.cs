// Resource.cs: the resource the process context publishes: the OpenTelemetry SDK's, once the app has built a
// TracerProvider (found by reflection: the hook takes no dependency on the SDK), else what the environment
// says (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), else the entry assembly's name.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Threading;

namespace SpanProfHook
{
    internal static class ResourceInfo
    {
        /// <summary>The package version (hook/Directory.Build.props), without the "+commit" suffix;
        /// not the assembly version, which is fixed at 1.0.0.0.</summary>
        internal static string HookVersion { get; } =
            typeof(ResourceInfo).Assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion.Split('+')[0]
            ?? typeof(ResourceInfo).Assembly.GetName().Version?.ToString(3) ?? "0.0.0";

        // spanprof.resource.source: where the published resource came from.
        public const string SourceSdk = "opentelemetry-sdk";
        public const string SourceEnvironment = "environment";
        public const string SourceEntryAssembly = "entry-assembly";

        /// <summary>service.instance.id when nobody else names the instance: one random UUID per process.</summary>
        private static readonly string s_instanceId = Guid.NewGuid().ToString();

        /// <summary>
        /// Until the SDK is found: service.name from OTEL_SERVICE_NAME, else service.name in
        /// OTEL_RESOURCE_ATTRIBUTES, else the entry assembly's name; service.instance.id (random
        /// unless OTEL_RESOURCE_ATTRIBUTES has one), telemetry.sdk.* naming the hook, and the rest
        /// of OTEL_RESOURCE_ATTRIBUTES.
        /// </summary>
        public static List<KeyValuePair<string, object>> FromEnvironment(out string source)
        {
            List<KeyValuePair<string, string>> env = ParseResourceAttributes(Environment.GetEnvironmentVariable("OTEL_RESOURCE_ATTRIBUTES"));
            string? name = NonEmpty(Environment.GetEnvironmentVariable("OTEL_SERVICE_NAME")) ?? Find(env, "service.name");
            source = SourceEnvironment;
            if (name == null)
            {
                source = SourceEntryAssembly;
                name = NonEmpty(Assembly.GetEntryAssembly()?.GetName().Name) ?? "unknown_service:" + ProcessName();
            }
            var attrs = new List<KeyValuePair<string, object>>
            {
                new("service.name", name),
                new("service.instance.id", Find(env, "service.instance.id") ?? s_instanceId),
                new("telemetry.sdk.language", "dotnet"),
                new("telemetry.sdk.name", "spanprof-hook"),
                new("telemetry.sdk.version", HookVersion),
            };
            foreach (KeyValuePair<string, string> kv in env)
            {
                if (!attrs.Exists(a => a.Key == kv.Key))
                    attrs.Add(new(kv.Key, kv.Value));
            }
            return attrs;
        }

        /// <summary>The SDK's resource, with our service.instance.id when it has none.</summary>
        public static List<KeyValuePair<string, object>> FromSdk(IEnumerable<KeyValuePair<string, object>> sdk)
        {
            var attrs = new List<KeyValuePair<string, object>>();
            foreach (KeyValuePair<string, object> kv in sdk)
            {
                if (!string.IsNullOrEmpty(kv.Key) && kv.Value != null && !attrs.Exists(a => a.Key == kv.Key))
                    attrs.Add(kv);
            }
            if (!attrs.Exists(a => a.Key == "service.instance.id"))
                attrs.Add(new("service.instance.id", s_instanceId));
            return attrs;
        }

        /// <summary>OTEL_RESOURCE_ATTRIBUTES: key=value pairs, comma-separated, values percent-encoded.</summary>
        internal static List<KeyValuePair<string, string>> ParseResourceAttributes(string? text)
        {
            var list = new List<KeyValuePair<string, string>>();
            if (string.IsNullOrWhiteSpace(text))
                return list;
            foreach (string pair in text.Split(','))
            {
                int eq = pair.IndexOf('=');
                if (eq <= 0)
                    continue;
                string key = pair.Substring(0, eq).Trim();
                string value;
                try
                {
                    value = Uri.UnescapeDataString(pair.Substring(eq + 1).Trim());
                }
                catch (UriFormatException)
                {
                    continue;
                }
                if (key.Length > 0 && !list.Exists(kv => kv.Key == key))
                    list.Add(new(key, value));
            }
            return list;
        }

        private static string? Find(List<KeyValuePair<string, string>> list, string key)
        {
            foreach (KeyValuePair<string, string> kv in list)
                if (kv.Key == key)
                    return NonEmpty(kv.Value);
            return null;
        }

        private static string? NonEmpty(string? s) => string.IsNullOrWhiteSpace(s) ? null : s.Trim();

        private static string ProcessName()
        {
            string? path = Environment.ProcessPath;
            return string.IsNullOrEmpty(path) ? "dotnet" : Path.GetFileName(path);
        }
    }

    /// <summary>
    /// Watches for the OpenTelemetry SDK's TracerProvider and hands its resource over once. The SDK
    /// registers an ActivityListener whose callbacks are the provider's own methods, so the provider
    /// is the Target of one of them (or of a closure that holds it); its resource then comes from the
    /// SDK's public OpenTelemetry.ProviderExtensions.GetResource(BaseProvider). Checked against
    /// OpenTelemetry 1.20.1 on .NET 10.0.12 (ActivitySource.s_allListeners: a SynchronizedList with a
    /// copy-on-write _volatileArray, in DiagnosticSource 10.0 also for net8.0; DiagnosticSource 8.0 keeps
    /// a List in _list, locked by its writers). Anything unexpected: no SDK resource, the environment's
    /// stands.
    /// </summary>
    internal sealed class SdkResourceWatch
    {
        private const int FastPeriodMs = 500, FastTicks = 120;     // the first minute after the SDK loads
        private const int SlowPeriodMs = 5000, SlowTicks = 108;    // then nine more
        private readonly Action<List<KeyValuePair<string, object>>> _found;
        private readonly object _lock = new();
        private Timer? _timer;
        private int _ticks;
        private int _busy;
        private bool _done;

        private SdkResourceWatch(Action<List<KeyValuePair<string, object>>> found) => _found = found;

        public static SdkResourceWatch? Start(Action<List<KeyValuePair<string, object>>> found)
        {
            // Native AOT keeps no metadata for the SDK's internals that TryRead looks for: the
            // environment's resource stands (hook/README.md).
            if (!System.Runtime.CompilerServices.RuntimeFeature.IsDynamicCodeSupported)
                return null;
            var w = new SdkResourceWatch(found);
            AppDomain.CurrentDomain.AssemblyLoad += w.OnAssemblyLoad;
            if (Loaded("OpenTelemetry") != null)
                w.Arm();
            return w;
        }

        public void Stop()
        {
            lock (_lock)
            {
                _done = true;
                _timer?.Dispose();
                _timer = null;
            }
            AppDomain.CurrentDomain.AssemblyLoad -= OnAssemblyLoad;
        }

        private void OnAssemblyLoad(object? sender, AssemblyLoadEventArgs e)
        {
            try
            {
                // FullName is cached by the runtime: no AssemblyName allocated per load.
                if (e.LoadedAssembly.FullName?.StartsWith("OpenTelemetry,", StringComparison.Ordinal) == true)
                    Arm();
            }
            catch
            {
                // an assembly load is not ours to disturb
            }
        }

        private void Arm()
        {
            lock (_lock)
            {
                if (_done || _timer != null)
                    return;
                // No ExecutionContext flows into the timer: its callbacks belong to no span.
                using (ExecutionContext.SuppressFlow())
                    _timer = new Timer(Tick, null, FastPeriodMs, FastPeriodMs);
            }
        }

        private void Tick(object? state)
        {
            if (Interlocked.Exchange(ref _busy, 1) != 0)
                return;
            try
            {
                List<KeyValuePair<string, object>>? attrs = TryRead();
                if (attrs != null)
                {
                    Stop();
                    _found(attrs);
                    return;
                }
                int t = ++_ticks;
                if (t == FastTicks)
                    lock (_lock)
                        _timer?.Change(SlowPeriodMs, SlowPeriodMs);
                else if (t >= FastTicks + SlowTicks)
                    Stop(); // a TracerProvider built this late is not looked for
            }
            catch
            {
                Stop(); // SDK internals not as expected: the environment's resource stands
            }
            finally
            {
                Volatile.Write(ref _busy, 0);
            }
        }

        /// <summary>The resource of the first TracerProvider among the ActivitySource listeners, or null.</summary>
#if NET8_0_OR_GREATER
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2026", Justification = "best effort: in a trimmed app what the trimmer removed is not found, and the environment's resource stands")]
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2075", Justification = "as above")]
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2070", Justification = "as above")]
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2080", Justification = "as above")]
#endif
        internal static List<KeyValuePair<string, object>>? TryRead()
        {
            Assembly? api = Loaded("OpenTelemetry.Api"), sdk = Loaded("OpenTelemetry");
            Type? baseProvider = api?.GetType("OpenTelemetry.BaseProvider");
            if (sdk == null || baseProvider == null)
                return null;
            MethodInfo? getResource = sdk.GetType("OpenTelemetry.ProviderExtensions")?
                .GetMethod("GetResource", BindingFlags.Public | BindingFlags.Static, null, new[] { baseProvider }, null);
            object? provider = FindProvider(baseProvider);
            if (getResource == null || provider == null)
                return null;
            object? resource = getResource.Invoke(null, new[] { provider });
            if (resource?.GetType().GetProperty("Attributes")?.GetValue(resource) is not IEnumerable<KeyValuePair<string, object>> attrs)
                return null;
            List<KeyValuePair<string, object>> list = ResourceInfo.FromSdk(attrs);
            return list.Exists(kv => kv.Key == "service.name") ? list : null; // Resource.Empty: not built yet
        }

#if NET8_0_OR_GREATER
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2026", Justification = "best effort: in a trimmed app what the trimmer removed is not found, and the environment's resource stands")]
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2075", Justification = "as above")]
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2070", Justification = "as above")]
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2080", Justification = "as above")]
#endif
        private static object? FindProvider(Type baseProvider)
        {
            object? all = typeof(ActivitySource).GetField("s_allListeners", BindingFlags.NonPublic | BindingFlags.Static)?.GetValue(null);
            foreach (ActivityListener l in Snapshot(all))
            {
                foreach (Delegate? d in new Delegate?[] { l.ActivityStarted, l.ActivityStopped, l.Sample, l.SampleUsingParentId, l.ShouldListenTo })
                {
                    object? target = d?.Target;
                    if (target == null)
                        continue;
                    if (baseProvider.IsInstanceOfType(target))
                        return target;
                    foreach (FieldInfo f in target.GetType().GetFields(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic))
                    {
                        if (!f.FieldType.IsValueType && f.GetValue(target) is object v && baseProvider.IsInstanceOfType(v))
                            return v; // a closure that holds the provider
                    }
                }
            }
            return null;
        }

#if NET8_0_OR_GREATER
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2026", Justification = "best effort: in a trimmed app what the trimmer removed is not found, and the environment's resource stands")]
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2075", Justification = "as above")]
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2070", Justification = "as above")]
        [System.Diagnostics.CodeAnalysis.UnconditionalSuppressMessage("Trimming", "IL2080", Justification = "as above")]
#endif
        private static ActivityListener[] Snapshot(object? list)
        {
            if (list == null)
                return Array.Empty<ActivityListener>();
            Type t = list.GetType();
            if (t.GetField("_volatileArray", BindingFlags.NonPublic | BindingFlags.Instance)?.GetValue(list) is ActivityListener[] arr)
                return (ActivityListener[])arr.Clone();
            if (t.GetField("_list", BindingFlags.NonPublic | BindingFlags.Instance)?.GetValue(list) is List<ActivityListener> l)
            {
                lock (l) // what SynchronizedList itself locks on .NET 8
                    return l.ToArray();
            }
            return Array.Empty<ActivityListener>();
        }

        private static Assembly? Loaded(string name)
        {
            foreach (Assembly a in AppDomain.CurrentDomain.GetAssemblies())
                if (a.GetName().Name == name)
                    return a;
            return null;
        }
    }
}
