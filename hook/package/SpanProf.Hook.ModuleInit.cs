// SpanProf.Hook.ModuleInit.cs: compiled into the app by the SpanProf.Hook package's build targets
// when the app runs no startup hook (PublishAot, PublishTrimmed or StartupHookSupport=false):
// the hook starts before Main, as the startup hook would, with no change to the app's code.
#pragma warning disable CA2255 // a module initializer in the app's own assembly is the point
namespace SpanProf.Generated
{
    internal static class SpanProfHookModuleInit
    {
        [global::System.Runtime.CompilerServices.ModuleInitializer]
        internal static void Start() => global::SpanProf.PackageStart.Initialize();
    }
}
