// Native.cs: the few libc calls the hook needs (memfd, mmap, gettid, /proc reads), allocation-free.
using System;
using System.Runtime.InteropServices;

namespace SpanProfHook
{
    internal static unsafe class Native
    {
        // .NET resolves "libc" to the C library on Linux (glibc and musl); checked on .NET 10.0.12.
        private const string Libc = "libc";

        public const uint MFD_CLOEXEC = 1, MFD_ALLOW_SEALING = 2, MFD_NOEXEC_SEAL = 8;
        public const int PROT_READ = 1, PROT_WRITE = 2, MAP_SHARED = 1, MAP_PRIVATE = 2;
        public const int MAP_ANONYMOUS = 0x20;    // same value on x86-64 and arm64
        public const int MADV_DONTFORK = 10;
        public const int PR_SET_VMA = 0x53564d41, PR_SET_VMA_ANON_NAME = 0;
        public const int CLOCK_BOOTTIME = 7;
        public const int O_RDONLY = 0, O_CLOEXEC = 0x80000; // same value on x86-64 and arm64
        public const int ENOENT = 2, ESRCH = 3;

        [DllImport(Libc, SetLastError = true)]
        public static extern int memfd_create(byte* name, uint flags);

        [DllImport(Libc, SetLastError = true)]
        public static extern int ftruncate(int fd, long length);

        [DllImport(Libc, SetLastError = true)]
        public static extern IntPtr mmap(IntPtr addr, nuint length, int prot, int flags, int fd, long offset);

        [DllImport(Libc, SetLastError = true)]
        public static extern int munmap(IntPtr addr, nuint length);

        [DllImport(Libc, SetLastError = true)]
        public static extern int close(int fd);

        [DllImport(Libc, SetLastError = true)]
        public static extern int madvise(IntPtr addr, nuint length, int advice);

        // prctl is variadic in C; on x86-64 and arm64 Linux its integer arguments travel in the same
        // registers as fixed ones.
        [DllImport(Libc, SetLastError = true)]
        public static extern int prctl(int option, nuint arg2, nuint arg3, nuint arg4, nuint arg5);

        [StructLayout(LayoutKind.Sequential)]
        private struct Timespec
        {
            public long Sec;
            public long Nsec;
        }

        [DllImport(Libc, SetLastError = true)]
        private static extern int clock_gettime(int clock, Timespec* ts);

        /// <summary>CLOCK_BOOTTIME in ns (the clock of OTEP 4719's published_at_ns); 0 on failure.</summary>
        public static ulong BoottimeNs()
        {
            Timespec ts;
            if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
                return 0;
            return (ulong)ts.Sec * 1_000_000_000UL + (ulong)ts.Nsec;
        }

        [DllImport(Libc, SetLastError = true)]
        private static extern int open(byte* path, int flags);

        [DllImport(Libc, SetLastError = true)]
        private static extern nint read(int fd, byte* buf, nuint count);

        [DllImport(Libc, EntryPoint = "gettid")]
        private static extern int libc_gettid();

        [DllImport(Libc, EntryPoint = "syscall")]
        private static extern long syscall0(long number);

        private static int s_gettidMode; // 0 untried, 1 libc gettid(), 2 raw syscall

        /// <summary>Thread id in the process's own pid namespace (what the slot table is keyed by).</summary>
        public static int GetTid()
        {
            if (s_gettidMode != 2)
            {
                try
                {
                    int tid = libc_gettid();
                    s_gettidMode = 1;
                    return tid;
                }
                catch (EntryPointNotFoundException)
                {
                    s_gettidMode = 2; // glibc < 2.30 or old musl: no gettid() wrapper
                }
            }
            long nr = RuntimeInformation.ProcessArchitecture switch
            {
                Architecture.X64 => 186,
                Architecture.Arm64 => 178,
                _ => -1,
            };
            if (nr < 0)
                throw new PlatformNotSupportedException("gettid: unknown architecture");
            return (int)syscall0(nr);
        }

        public static int LastErrno => Marshal.GetLastPInvokeError();

        /// <summary>Reads at most len bytes of a small file into buf; returns the count or -errno.</summary>
        public static int ReadSmallFile(byte* path, byte* buf, int len)
        {
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                return -LastErrno;
            int total = 0;
            while (total < len)
            {
                nint n = read(fd, buf + total, (nuint)(len - total));
                if (n < 0)
                {
                    int e = LastErrno;
                    close(fd);
                    return -e;
                }
                if (n == 0)
                    break;
                total += (int)n;
            }
            close(fd);
            return total;
        }

        /// <summary>Writes "prefix" + decimal n + "suffix" NUL-terminated into dst (>= 64 bytes).</summary>
        public static void FormatPath(byte* dst, string prefix, int n, string suffix)
        {
            int p = 0;
            foreach (char c in prefix)
                dst[p++] = (byte)c;
            byte* digits = stackalloc byte[12];
            int d = 0;
            uint v = (uint)n;
            do
            {
                digits[d++] = (byte)('0' + v % 10);
                v /= 10;
            } while (v != 0);
            while (d > 0)
                dst[p++] = digits[--d];
            foreach (char c in suffix)
                dst[p++] = (byte)c;
            dst[p] = 0;
        }

        /// <summary>
        /// Field 22 (starttime, clock ticks since boot) of a /proc stat file; -1 if the task is gone
        /// (ENOENT/ESRCH), -2 on any other failure.
        /// </summary>
        public static long ReadStatStartTicks(byte* path)
        {
            byte* buf = stackalloc byte[1024];
            int n = ReadSmallFile(path, buf, 1023);
            if (n == -ENOENT || n == -ESRCH)
                return -1;
            if (n <= 0)
                return -2;
            // comm (field 2) may hold spaces and ')': fields resume after the last ')'.
            int i = n - 1;
            while (i >= 0 && buf[i] != (byte)')')
                i--;
            if (i < 0)
                return -2;
            i++;
            int field = 2;
            while (i < n)
            {
                while (i < n && buf[i] == (byte)' ')
                    i++;
                if (i >= n)
                    break;
                field++;
                if (field == 22)
                {
                    long v = 0;
                    int digits = 0;
                    while (i < n && buf[i] >= (byte)'0' && buf[i] <= (byte)'9')
                    {
                        v = v * 10 + (buf[i] - '0');
                        i++;
                        digits++;
                    }
                    return digits > 0 ? v : -2;
                }
                while (i < n && buf[i] != (byte)' ')
                    i++;
            }
            return -2;
        }

        /// <summary>
        /// Boottime offset of this process's time namespace in USER_HZ ticks (floor), from
        /// /proc/self/timens_offsets ("boottime SECS NSECS"); 0 when the file is absent.
        /// </summary>
        public static long ReadBoottimeOffsetTicks()
        {
            byte* path = stackalloc byte[64];
            FormatPathLiteral(path, "/proc/self/timens_offsets");
            byte* buf = stackalloc byte[256];
            int n = ReadSmallFile(path, buf, 255);
            if (n <= 0)
                return 0;
            string text = new string((sbyte*)buf, 0, n);
            foreach (string line in text.Split('\n'))
            {
                string[] f = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
                if (f.Length == 3 && (f[0] == "boottime" || f[0] == "7"))
                {
                    long secs = long.Parse(f[1], System.Globalization.CultureInfo.InvariantCulture);
                    long nsecs = long.Parse(f[2], System.Globalization.CultureInfo.InvariantCulture);
                    long ns = secs * 1_000_000_000L + nsecs;
                    long tick = 1_000_000_000L / Table.UserHz;
                    return ns >= 0 ? ns / tick : -((-ns + tick - 1) / tick);
                }
            }
            return 0;
        }

        public static void FormatPathLiteral(byte* dst, string s)
        {
            int p = 0;
            foreach (char c in s)
                dst[p++] = (byte)c;
            dst[p] = 0;
        }
    }
}
