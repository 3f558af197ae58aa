// VersionTests.cs: the hook's version comes from one place (hook/Directory.Build.props), while the
// assembly version stays 1.0.0.0 (hook/README.md, "copies of the hook"); the public API is one type.
using System;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Text.RegularExpressions;
using SpanProfHook;
using Xunit;

namespace SpanProfHookTests
{
    public class VersionTests
    {
        private static readonly Assembly HookAsm = typeof(SpanProf.Label).Assembly;

        private static string PropsVersion() =>
            Regex.Match(File.ReadAllText(Path.Combine(Util.RepoRoot, "hook", "Directory.Build.props")), "<Version>([^<]+)</Version>").Groups[1].Value;

        [Fact]
        public void PackageFileAndSdkVersionsFollowDirectoryBuildProps()
        {
            string v = PropsVersion();
            Assert.Matches(@"^\d+\.\d+\.\d+", v);
            Assert.Equal(v, HookAsm.GetCustomAttribute<AssemblyInformationalVersionAttribute>()!.InformationalVersion.Split('+')[0]);
            Assert.StartsWith(v, HookAsm.GetCustomAttribute<AssemblyFileVersionAttribute>()!.Version);
            Assert.Equal(v, ResourceInfo.HookVersion); // telemetry.sdk.version of the process context
        }

        [Fact]
        public void TheAssemblyVersionIsFixed() => Assert.Equal(new Version(1, 0, 0, 0), HookAsm.GetName().Version);

        [Fact]
        public void ThePublicApiIsLabelAndPackageStart()
        {
            var types = HookAsm.GetExportedTypes().Select(t => t.FullName).OrderBy(n => n).ToArray();
            Assert.Equal(new[] { "SpanProf.Label", "SpanProf.PackageStart" }, types);
            // PackageStart: the start for apps that run no startup hook (the package's module initializer).
            var start = typeof(SpanProf.PackageStart).GetMembers(BindingFlags.Public | BindingFlags.Static | BindingFlags.DeclaredOnly)
                .Select(m => m.Name).ToArray();
            Assert.Equal(new[] { "Initialize" }, start);
            var members = typeof(SpanProf.Label).GetMembers(BindingFlags.Public | BindingFlags.Instance | BindingFlags.Static | BindingFlags.DeclaredOnly)
                .Select(m => m.Name).OrderBy(n => n).ToArray();
            Assert.Equal(new[] { ".ctor", "Dispose" }, members);
            Assert.True(typeof(IDisposable).IsAssignableFrom(typeof(SpanProf.Label)));
        }
    }
}
