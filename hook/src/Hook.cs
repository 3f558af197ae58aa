// Hook.cs: process-wide start-up, the AsyncLocal that carries {span, labels}, and the slot writer.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Threading;

namespace SpanProfHook
{
    internal static unsafe class Hook
    {
        // Process-wide rendezvous between copies of this assembly (startup hook + package reference
        // loaded from two paths or two load contexts): AppContext data lives in CoreLib, shared by all
        // copies, and an interned string is one object for the whole runtime.
        private const string ApiKey = "SpanProf.Hook.Api.v1";
        private static readonly object s_initLock = string.Intern("SpanProf.Hook.InitLock.v1");

        private static int s_initDone;
        private static volatile bool s_enabled;
        private static int s_disabledOnce;
        private static Table? s_table;
        private static ProcessContext? s_context;
        private static AsyncLocal<State?>? s_state;
        private static ActivityListener? s_pyroscope;
        private static string s_origin = "";

        // Set when another copy of the assembly owns the table: everything is forwarded to it.
        private static Func<string, string, object?>? s_remotePush;
        private static Action<object?>? s_remotePop;
        private static Func<bool>? s_remoteActive;

        /// <summary>Token for "the label was not applied": Dispose does nothing.</summary>
        internal static readonly object NotApplied = new();

        // Slot of the calling thread: 0 = not claimed yet, -1 = none (table full or failed).
        [ThreadStatic]
        private static nint t_slot;

        internal static Table? CurrentTable => s_table;
        internal static string Origin => s_origin;

        public static bool IsActive => s_remoteActive != null ? SafeRemoteActive() : s_enabled;

        private static bool SafeRemoteActive()
        {
            try { return s_remoteActive!(); }
            catch { return false; }
        }

        /// <summary>Starts the hook once per process; true when span context is being published.</summary>
        public static bool EnsureStarted(string origin)
        {
            if (Volatile.Read(ref s_initDone) != 0)
                return IsActive;
            try
            {
                lock (s_initLock)
                {
                    if (s_initDone != 0)
                        return IsActive;
                    if (AppContext.GetData(ApiKey) is object[] api && api.Length >= 3 &&
                        api[0] is Func<string, string, object?> push && api[1] is Action<object?> pop &&
                        api[2] is Func<bool> active)
                    {
                        s_remotePush = push;
                        s_remotePop = pop;
                        s_remoteActive = active;
                        s_origin = origin + " (forwarding to the copy started by " + (api.Length > 3 ? api[3] : "?") + ")";
                        Verbose("another copy of SpanProf.Hook owns the table; forwarding to it");
                    }
                    else
                    {
                        s_origin = origin;
                        try
                        {
                            StartOwner();
                        }
                        finally
                        {
                            // Published even when start-up failed, so no other copy tries again.
                            AppDomain.CurrentDomain.SetData(ApiKey, new object[] // = AppContext.SetData (public only from .NET 7)
                            {
                                (Func<string, string, object?>)PushLocal,
                                (Action<object?>)PopLocal,
                                (Func<bool>)(() => s_enabled),
                                origin,
                            });
                        }
                    }
                    Volatile.Write(ref s_initDone, 1);
                }
            }
            catch (Exception e)
            {
                Disable("start-up failed: " + e.GetType().Name + ": " + e.Message);
                Volatile.Write(ref s_initDone, 1);
            }
            return IsActive;
        }

        /// <summary>The oldest runtime the hook serves (it is built for net6.0 only so that older
        /// runtimes can load it and be told so). Tested on .NET 8, 9 and 10.</summary>
        internal const int MinRuntimeMajor = 8;

        /// <summary>Null when the hook can serve this runtime, else the one-line reason.</summary>
        internal static string? RuntimeRefusal(Version runtime, string? fault)
        {
            if (fault == "runtime")
                runtime = new Version(7, 0, 20); // tests: behave as on an unsupported runtime
            if (runtime.Major >= MinRuntimeMajor)
                return null;
            return $".NET {runtime} is not supported (the hook needs .NET {MinRuntimeMajor} or later); the app runs without span labels";
        }

        private static void StartOwner()
        {
            if (!OperatingSystem.IsLinux())
            {
                Disable("not Linux");
                return;
            }
            if (Environment.GetEnvironmentVariable("SPANPROF_HOOK_DISABLE") == "1")
            {
                Verbose("disabled by SPANPROF_HOOK_DISABLE=1");
                return;
            }
            string? fault = Fault.Name; // tests only
            if (RuntimeRefusal(Environment.Version, fault) is string refusal)
            {
                Disable(refusal);
                return;
            }
            string maps = File.ReadAllText("/proc/self/maps");
            if (maps.Contains("/memfd:" + Table.MemfdName, StringComparison.Ordinal))
            {
                Disable("a " + Table.MemfdName + " table already exists in this process");
                return;
            }
            uint slots = Table.SlotCountFor(Environment.GetEnvironmentVariable("SPANPROF_MAX_THREADS"));
            Table? table = Table.Create(slots, fault, out string? error);
            if (table == null)
            {
                Disable(error ?? "table creation failed");
                return;
            }
            s_table = table;
            StartProcessContext(table, maps, fault);
            table.Announce();
            s_state = new AsyncLocal<State?>(OnStateChanged);
            s_enabled = true;
            if (!SpanChanges.Subscribe(out string? why))
            {
                Disable(why!);
                return;
            }
            if (Activity.Current is Activity current)
                s_state.Value = new State(current, null);
            if (Environment.GetEnvironmentVariable("SPANPROF_PYROSCOPE_PROFILE_ID") == "1")
                AddPyroscopeListener();
            Verbose($"table at 0x{(ulong)table.Base:x}, {table.SlotCount} slots of {table.SlotSize} bytes ({s_origin})");
            if (fault != null)
                Fault.At("startup"); // a failure after the table exists: Disable must free it
        }

        internal static ProcessContext? CurrentContext => s_context;

        /// <summary>
        /// Publishes the OTEP 4719 process context (hook/README.md): the resource, and the key map
        /// of the table, republished whenever a key is added (before any record uses it). Without
        /// it the table works on; one line on stderr says why.
        /// </summary>
        private static void StartProcessContext(Table table, string maps, string? fault)
        {
            if (Environment.GetEnvironmentVariable("SPANPROF_PROCESS_CONTEXT") == "0")
            {
                Verbose("process context not published: SPANPROF_PROCESS_CONTEXT=0");
                return;
            }
            // OTEP 4719: one context per process. Another publisher came first: leave it alone.
            if (maps.Contains("/memfd:" + ProcessContext.MappingName, StringComparison.Ordinal) ||
                maps.Contains(":" + ProcessContext.MappingName + "]", StringComparison.Ordinal))
            {
                Verbose("process context not published: this process already has an OTEL_CTX mapping");
                return;
            }
            try
            {
                string? error = "fault injected";
                ProcessContext? ctx = fault == "otelctx" ? null : ProcessContext.Create(fault, out error);
                if (ctx == null)
                {
                    Log("process context not published: " + error);
                    return;
                }
                List<KeyValuePair<string, object>> resource = ResourceInfo.FromEnvironment(out string source);
                if (!ctx.Publish(resource, source, table.KeyNames()))
                {
                    Log("process context not published: payload over " + ProcessContext.BufferSize + " bytes");
                    return;
                }
                s_context = ctx;
                table.KeysChanged = ctx.KeysChanged;
                SdkResourceWatch.Start(sdk => ctx.ResourceChanged(sdk, ResourceInfo.SourceSdk));
                Verbose($"process context at 0x{(ulong)ctx.Base:x} ({source})");
            }
            catch (Exception e)
            {
                Log("process context not published: " + e.GetType().Name + ": " + e.Message);
            }
        }

        /// <summary>Turns the hook off for good, frees every slot, says why once on stderr.</summary>
        internal static void Disable(string reason)
        {
            s_enabled = false;
            if (Interlocked.Exchange(ref s_disabledOnce, 1) != 0)
                return;
            try
            {
                SpanChanges.Unsubscribe();
                s_pyroscope?.Dispose();
                s_table?.ReleaseAll();
                s_context?.DropThreadLocal();
            }
            catch
            {
                // nothing more to undo
            }
            Log("disabled: " + reason);
        }

        internal static void Log(string message)
        {
            if (Environment.GetEnvironmentVariable("SPANPROF_HOOK_QUIET") == "1")
                return;
            try { Console.Error.WriteLine("spanprof-hook: " + message); }
            catch { /* no stderr: stay silent */ }
        }

        private static void Verbose(string message)
        {
            if (Environment.GetEnvironmentVariable("SPANPROF_HOOK_VERBOSE") == "1")
                Log(message);
        }

        // Activity.Current was set explicitly (start, stop, assignment): new state for this context.
        internal static void OnActivityChanged(Activity? act)
        {
            if (!s_enabled)
                return;
            try
            {
                AsyncLocal<State?> al = s_state!;
                State? cur = al.Value;
                if (Fault.Name != null)
                    Fault.At("span-change");
                if (ReferenceEquals(cur?.Activity, act))
                    return;
                LabelSet? labels = cur?.Labels;
                State? outer = cur?.Outer;
                if (outer != null && ReferenceEquals(outer.Activity, act) && ReferenceEquals(outer.Labels, labels))
                    al.Value = outer; // a span stopped: back to its parent's state, no new record
                else if (act == null && labels == null)
                    al.Value = null;
                else
                    al.Value = new State(act, labels, cur != null && ReferenceEquals(act?.Parent, cur.Activity) ? cur : null);
            }
            catch (Exception ex)
            {
                Disable("span change: " + ex.Message);
            }
        }

        // Runs on the affected thread on every change of this AsyncLocal's value for that thread:
        // explicit sets and every ExecutionContext switch. No allocation, no lock, must not throw
        // (an exception here is a FailFast in the runtime).
        private static void OnStateChanged(AsyncLocalValueChangedArgs<State?> args)
        {
            if (!s_enabled)
                return;
            try
            {
                if (Fault.Name != null)
                    Fault.At("switch");
                Publish(args.CurrentValue);
            }
            catch (Exception ex)
            {
                Disable("context switch: " + ex.Message);
            }
        }

        /// <summary>Copies the state's record into this thread's slot (OTEP 4947 write protocol).</summary>
        internal static void Publish(State? state)
        {
            nint slot = t_slot;
            if (slot <= 0)
            {
                if (slot < 0)
                    return;
                slot = ClaimForThisThread();
                if (slot <= 0)
                    return;
            }
            byte* r = (byte*)slot + Table.SlotHead;
            // OTEP 4947 protocol: valid=0, body, valid=1. The reader is the BPF program sampling
            // this very thread on its own CPU, which sees the thread's stores in program order, so
            // only the compiler must keep the order (no CPU fence; a full fence cost ~14 ns here):
            // the body is written by a call the JIT cannot inline or move stores across, and
            // valid=1 is a release store after it.
            Volatile.Write(ref r[RecordEncoder.OffValid], (byte)0);
            CopyRecord(r, state?.Record ?? RecordEncoder.Empty);
            Volatile.Write(ref r[RecordEncoder.OffValid], (byte)1);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void CopyRecord(byte* dst, byte[] rec)
        {
            // rec's valid byte is 0, so the slot stays invalid until the caller's final store.
            fixed (byte* src = rec)
                Buffer.MemoryCopy(src, dst, Table.RecordMax, rec.Length);
        }

        private static nint ClaimForThisThread()
        {
            Table? table = s_table;
            if (table == null || !s_enabled)
            {
                t_slot = -1;
                return -1;
            }
            uint tid = (uint)Native.GetTid();
            long start = table.CurrentThreadStartTicks();
            if (start < 0)
            {
                t_slot = -1;
                return -1;
            }
            byte* s = table.ClaimSlot(tid, (ulong)start);
            t_slot = s == null ? -1 : (nint)s;
            return t_slot;
        }

        /// <summary>Applies a label in the current context; returns the token that undoes it.</summary>
        public static object? Push(string key, string value)
        {
            if (s_remotePush != null)
            {
                try { return s_remotePush(key, value); }
                catch { return NotApplied; }
            }
            return PushLocal(key, value);
        }

        public static void Pop(object? token)
        {
            if (ReferenceEquals(token, NotApplied))
                return;
            if (s_remotePop != null)
            {
                try { s_remotePop(token); }
                catch { /* owner gone: nothing to undo */ }
                return;
            }
            PopLocal(token);
        }

        private static object? PushLocal(string key, string value)
        {
            if (!s_enabled || key == null)
                return NotApplied;
            try
            {
                if (Fault.Name != null)
                    Fault.At("label");
                int idx = s_table!.KeyIndex(key);
                if (idx < 0)
                {
                    Interlocked.Increment(ref RecordEncoder.Dropped);
                    return NotApplied;
                }
                byte[] v = RecordEncoder.Utf8Truncated(value ?? "", 255);
                AsyncLocal<State?> al = s_state!;
                State? prev = al.Value;
                al.Value = new State(Activity.Current, LabelSet.With(prev?.Labels, (byte)idx, v));
                return prev;
            }
            catch (Exception ex)
            {
                Disable("label: " + ex.Message);
                return NotApplied;
            }
        }

        private static void PopLocal(object? token)
        {
            if (!s_enabled || ReferenceEquals(token, NotApplied))
                return;
            try
            {
                if (Fault.Name != null)
                    Fault.At("label-end");
                var prev = (State?)token;
                // The span may have changed inside the scope (started and not yet stopped): keep
                // the current span, restore only the labels.
                Activity? act = Activity.Current;
                State? next = ReferenceEquals(prev?.Activity, act) ? prev
                    : act == null && prev?.Labels == null ? null : new State(act, prev?.Labels);
                s_state!.Value = next;
            }
            catch (Exception ex)
            {
                Disable("label scope end: " + ex.Message);
            }
        }

        private static void AddPyroscopeListener()
        {
            // Never changes a sampling decision (None is the lowest result), only tags local roots
            // that someone else decided to create: Grafana links a trace to its profile by this tag.
            var l = new ActivityListener
            {
                ShouldListenTo = _ => true,
                Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.None,
                SampleUsingParentId = (ref ActivityCreationOptions<string> _) => ActivitySamplingResult.None,
                ActivityStarted = a =>
                {
                    try
                    {
                        if (a.Parent == null)
                            a.SetTag("pyroscope.profile.id", a.SpanId.ToHexString());
                    }
                    catch
                    {
                        // a tag is not worth disturbing the app for
                    }
                },
            };
            ActivitySource.AddActivityListener(l);
            s_pyroscope = l;
        }
    }

#if NET8_0_OR_GREATER
    /// <summary>
    /// Activity.CurrentChanged (.NET 7+), subscribed directly in the net8.0 build: nothing for the
    /// trimmer to remove, nothing for Native AOT to miss. The handler reads Activity.Current, which
    /// the runtime sets just before it raises the event, to the value of e.Current.
    /// </summary>
    internal static class SpanChanges
    {
        private static EventHandler<ActivityChangedEventArgs>? s_handler;

        public static bool Subscribe(out string? error)
        {
            error = null;
            EventHandler<ActivityChangedEventArgs> h = OnChanged;
            Activity.CurrentChanged += h;
            s_handler = h;
            return true;
        }

        public static void Unsubscribe()
        {
            if (s_handler != null)
                Activity.CurrentChanged -= s_handler;
        }

        private static void OnChanged(object? sender, ActivityChangedEventArgs e) => Hook.OnActivityChanged(Activity.Current);
    }
#else
    /// <summary>
    /// Activity.CurrentChanged (.NET 7+), subscribed by reflection in the net6.0 build (so that a
    /// .NET 6 or 7 runtime can load it and be told it is not served), whose DiagnosticSource has no
    /// such event. The handler is OnChanged&lt;ActivityChangedEventArgs&gt;, made once at start: an
    /// ordinary delegate call. It reads Activity.Current (one AsyncLocal read more than e.Current;
    /// not measured separately), which the runtime sets just before it raises the event, to the
    /// value of e.Current. Trimmed and Native AOT apps compile against the net8.0 build instead.
    /// </summary>
    internal static class SpanChanges
    {
        private static EventInfo? s_event;
        private static Delegate? s_handler;

        public static bool Subscribe(out string? error)
        {
            error = null;
            EventInfo? ev = typeof(Activity).GetEvent("CurrentChanged", BindingFlags.Public | BindingFlags.Static);
            Type? handlerType = ev?.EventHandlerType;
            if (ev == null || handlerType == null || !handlerType.IsGenericType)
            {
                error = "Activity.CurrentChanged not found (System.Diagnostics.DiagnosticSource older than 7.0)";
                return false;
            }
            Type args = handlerType.GetGenericArguments()[0];
            MethodInfo open = typeof(SpanChanges).GetMethod(nameof(OnChanged), BindingFlags.NonPublic | BindingFlags.Static)!;
            Delegate d = Delegate.CreateDelegate(handlerType, open.MakeGenericMethod(args));
            ev.AddEventHandler(null, d);
            s_event = ev;
            s_handler = d;
            return true;
        }

        public static void Unsubscribe()
        {
            if (s_event != null && s_handler != null)
                s_event.RemoveEventHandler(null, s_handler);
        }

        private static void OnChanged<TArgs>(object? sender, TArgs e) => Hook.OnActivityChanged(Activity.Current);
    }
#endif

    /// <summary>
    /// SPANPROF_HOOK_FAULT: a failure to inject at one site, read only by the test build
    /// (SPANPROF_TEST_FAULTS, -p:SpanProfTestFaults=true: build/testhook); the shipped hook never
    /// reads it. Read once; a static readonly null is a constant to the optimizing JIT, so the
    /// checks cost nothing. Sites: memfd, ftruncate, mmap (table creation), runtime (an unsupported
    /// runtime), startup, span-change, switch, label, label-end (an exception there), otelctx,
    /// otelctx-memfd.
    /// </summary>
    internal static class Fault
    {
#if SPANPROF_TEST_FAULTS
        internal static readonly string? Name = Environment.GetEnvironmentVariable("SPANPROF_HOOK_FAULT");
#else
        internal static readonly string? Name = null;
#endif

        [MethodImpl(MethodImplOptions.NoInlining)]
        internal static void At(string site)
        {
            if (Name == site)
                throw new InvalidOperationException("fault injected at " + site);
        }
    }
}
