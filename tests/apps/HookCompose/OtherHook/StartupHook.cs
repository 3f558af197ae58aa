// OtherHook's startup hook: the runtime calls StartupHook.Initialize() (no namespace) before Main
// when OtherHook.dll is listed in DOTNET_STARTUP_HOOKS. It writes "otherhook: loaded" on stderr,
// adds a listener for its ActivitySource "OtherHook" (without one, StartActivity returns null) and
// starts a background thread that spends its CPU in OtherBurn inside spans named "otherhook-job".
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

internal static class StartupHook
{
    private static readonly ActivitySource Source = new("OtherHook");

    public static void Initialize()
    {
        Console.Error.WriteLine("otherhook: loaded");
        ActivitySource.AddActivityListener(new ActivityListener
        {
            ShouldListenTo = s => s.Name == "OtherHook",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        });
        new Thread(Loop) { IsBackground = true, Name = "otherhook" }.Start();
    }

    private static long s_sink;

    private static void Loop()
    {
        while (true)
        {
            using Activity? span = Source.StartActivity("otherhook-job");
            Volatile.Write(ref s_sink, OtherBurn(300_000));
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long OtherBurn(int k)
    {
        long x = 1;
        for (int i = 0; i < k; i++)
            x = x * 37 + (i ^ (x >> 5));
        return x;
    }
}
