// ProcessContext.cs: the OTEP 4719 process context: a memfd named OTEL_CTX holding this process's resource
// and OTEP 4947's thread-local reference data (the span table's key map), published and updated with
// OTEP 4719's protocol. Layout and protocol: hook/README.md, "Process context (OTEP 4719)".
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Text;
using System.Threading;

namespace SpanProfHook
{
    internal sealed unsafe class ProcessContext
    {
        public const string MappingName = "OTEL_CTX";
        public const uint Version = 2;
        public const int HeaderSize = 32;
        /// <summary>Room for one payload; the mapping holds two, used in turn.</summary>
        public const int BufferSize = 32 * 1024;
        /// <summary>threadlocal.schema_version: OTEP 4947 records, found through the spanprof-ctx table.</summary>
        public const string SchemaVersion = "spanprof_ctx_v1";
        /// <summary>An attribute whose key or encoded value is longer is dropped (and counted).</summary>
        public const int AttrMax = 4096;

        // struct { char signature[8]; u32 version; u32 payload_size; u64 published_at_ns; u64 payload; }
        private const int OffVersion = 8, OffPayloadSize = 12, OffPublishedAt = 16, OffPayloadPtr = 24;

        private readonly byte* _base;
        private readonly nuint _size;
        private readonly int _bufOffset;
        private readonly object _lock = new();   // one writer at a time (OTEP 4947: the SDK's job)
        private int _active = -1;                 // buffer the header points at; -1 before the first
        private ulong _publishedAt;
        private IReadOnlyList<KeyValuePair<string, object>> _resource = Array.Empty<KeyValuePair<string, object>>();
        private string? _source;
        private string[]? _keys;

        /// <summary>Publications (first one and updates), failed ones, attributes dropped by the last.</summary>
        public long Publishes, Failures;
        public int DroppedAttributes;

        private ProcessContext(byte* mapBase, nuint size, int bufOffset)
        {
            _base = mapBase;
            _size = size;
            _bufOffset = bufOffset;
        }

        public byte* Base => _base;
        public string? Source => _source;

        /// <summary>
        /// Maps the context (not published yet): a memfd named OTEL_CTX, or, where memfd is refused,
        /// anonymous memory named OTEL_CTX with prctl. Null and a reason when neither is possible.
        /// </summary>
        public static ProcessContext? Create(string? fault, out string? error)
        {
            error = null;
            int page = Environment.SystemPageSize;
            int bufOffset = page; // the header alone in the first page, then the two payload buffers
            nuint size = (nuint)((bufOffset + 2 * BufferSize + page - 1) / page * page);
            byte* name = stackalloc byte[16];
            Native.FormatPathLiteral(name, MappingName);
            IntPtr failed = new(-1), p = failed;

            int fd = -1;
            if (fault != "otelctx-memfd")
            {
                // MFD_NOEXEC_SEAL (Linux 6.3+) keeps the kernel from warning about an executable memfd.
                fd = Native.memfd_create(name, Native.MFD_CLOEXEC | Native.MFD_ALLOW_SEALING | Native.MFD_NOEXEC_SEAL);
                if (fd < 0)
                    fd = Native.memfd_create(name, Native.MFD_CLOEXEC | Native.MFD_ALLOW_SEALING);
            }
            if (fd >= 0)
            {
                // Private: the pages are this process's own; /proc/<pid>/maps still names the file
                // "/memfd:OTEL_CTX (deleted)" once the fd is closed.
                if (Native.ftruncate(fd, (long)size) == 0)
                    p = Native.mmap(IntPtr.Zero, size, Native.PROT_READ | Native.PROT_WRITE, Native.MAP_PRIVATE, fd, 0);
                Native.close(fd);
            }
            bool anonymous = p == failed;
            if (anonymous)
            {
                p = Native.mmap(IntPtr.Zero, size, Native.PROT_READ | Native.PROT_WRITE,
                    Native.MAP_PRIVATE | Native.MAP_ANONYMOUS, -1, 0);
                if (p == failed)
                {
                    error = $"mmap({size}) failed (errno {Native.LastErrno})";
                    return null;
                }
            }
            // A forked child must not show the parent's context (service.instance.id) as its own.
            if (Native.madvise(p, size, Native.MADV_DONTFORK) != 0)
            {
                error = $"madvise(MADV_DONTFORK) failed (errno {Native.LastErrno})";
                Native.munmap(p, size);
                return null;
            }
            var ctx = new ProcessContext((byte*)p, size, bufOffset);
            // Named unconditionally (OTEP 4719): it fails on a memfd and on kernels without
            // CONFIG_ANON_VMA_NAME, but a reader may hook prctl to learn about new contexts.
            int named = ctx.Name();
            if (anonymous && named != 0)
            {
                error = $"no memfd and no PR_SET_VMA_ANON_NAME (errno {named}): no reader could find it";
                Native.munmap(p, size);
                return null;
            }
            return ctx;
        }

        private int Name()
        {
            byte* name = stackalloc byte[16];
            Native.FormatPathLiteral(name, MappingName);
            return Native.prctl(Native.PR_SET_VMA, (nuint)Native.PR_SET_VMA_ANON_NAME, (nuint)_base, _size, (nuint)name) == 0
                ? 0 : Native.LastErrno;
        }

        /// <summary>First publication. False (and the mapping unmapped) when it fails.</summary>
        public bool Publish(IReadOnlyList<KeyValuePair<string, object>> resource, string source, string[]? keys)
        {
            lock (_lock)
            {
                _resource = resource;
                _source = source;
                _keys = keys;
                if (PublishLocked())
                    return true;
                Native.munmap((IntPtr)_base, _size);
                return false;
            }
        }

        /// <summary>The key map grew (called with the table's key lock held: maps are published in order).</summary>
        public void KeysChanged(string[] keys) => Update(() => _keys = keys);

        /// <summary>The OpenTelemetry SDK's resource was found.</summary>
        public void ResourceChanged(IReadOnlyList<KeyValuePair<string, object>> resource, string source) =>
            Update(() =>
            {
                _resource = resource;
                _source = source;
            });

        /// <summary>The hook disabled itself: the key map no longer describes a live table.</summary>
        public void DropThreadLocal() => Update(() => _keys = null);

        private void Update(Action change)
        {
            try
            {
                lock (_lock)
                {
                    if (_active < 0)
                        return; // never published (or unmapped)
                    change();
                    PublishLocked();
                }
            }
            catch
            {
                Interlocked.Increment(ref Failures); // never into the app
            }
        }

        /// <summary>
        /// OTEP 4719's protocols. The payload goes to the buffer no header points at now. First
        /// publication: version, size, pointer; fence; signature; fence; published_at_ns. Update:
        /// published_at_ns = 0; fence; size, pointer; fence; published_at_ns = a new value. A reader
        /// that sees 0, or a different published_at_ns after reading the payload, reads again.
        /// </summary>
        private bool PublishLocked()
        {
            byte[] payload = Encode(_resource, _source, _keys, BufferSize, out int dropped);
            if (payload.Length > BufferSize)
            {
                Failures++;
                return false;
            }
            int next = _active == 0 ? 1 : 0;
            byte* dst = _base + _bufOffset + next * BufferSize;
            payload.CopyTo(new Span<byte>(dst, BufferSize));
            // Never 0 and always moving forward, even when the clock has not: readers compare it.
            ulong now = Native.BoottimeNs();
            ulong at = now > _publishedAt ? now : _publishedAt + 1;
            byte* h = _base;
            ref ulong publishedAt = ref *(ulong*)(h + OffPublishedAt);
            if (_active < 0)
            {
                *(uint*)(h + OffVersion) = Version;
                *(uint*)(h + OffPayloadSize) = (uint)payload.Length;
                *(ulong*)(h + OffPayloadPtr) = (ulong)dst;
                Interlocked.MemoryBarrier();
                "OTEL_CTX"u8.CopyTo(new Span<byte>(h, 8));
                Interlocked.MemoryBarrier();
                Volatile.Write(ref publishedAt, at);
            }
            else
            {
                Volatile.Write(ref publishedAt, 0UL);
                Interlocked.MemoryBarrier();
                Volatile.Write(ref *(uint*)(h + OffPayloadSize), (uint)payload.Length);
                Volatile.Write(ref *(ulong*)(h + OffPayloadPtr), (ulong)dst);
                Interlocked.MemoryBarrier();
                Volatile.Write(ref publishedAt, at);
            }
            Interlocked.MemoryBarrier();
            Name(); // OTEP 4719: again at every update, for readers that hook prctl
            _active = next;
            _publishedAt = at;
            Publishes++;
            DroppedAttributes = dropped;
            return true;
        }

        // ---- payload: opentelemetry.proto.processcontext.v1development.ProcessContext -----------
        //
        // Hand-encoded (the hook takes no dependency), field numbers from
        // user/export/proto/opentelemetry/proto/{processcontext/v1development/process_context,
        // resource/v1/resource,common/v1/common}.proto:
        //   ProcessContext { Resource resource = 1; repeated KeyValue attributes = 2; }
        //   Resource       { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
        //   KeyValue       { string key = 1; AnyValue value = 2; }
        //   AnyValue       { oneof { string string_value = 1; bool bool_value = 2; int64 int_value = 3;
        //                            double double_value = 4; ArrayValue array_value = 5; } }
        //   ArrayValue     { repeated AnyValue values = 1; }

        /// <summary>
        /// The payload. Resource attributes that do not fit in budget bytes, or are longer than
        /// AttrMax, are left out and counted in dropped (and in Resource.dropped_attributes_count).
        /// </summary>
        internal static byte[] Encode(IReadOnlyList<KeyValuePair<string, object>> resource, string? source,
            string[]? keys, int budget, out int dropped)
        {
            var extra = new PbWriter();
            if (keys != null)
            {
                extra.MessageIf(2, KeyValue("threadlocal.schema_version", SchemaVersion));
                // At most 255 keys of 255 bytes, in a 16 KiB key table: always fits.
                extra.MessageIf(2, KeyValue("threadlocal.attribute_key_map", keys, BufferSize / 2));
            }
            if (source != null)
                extra.MessageIf(2, KeyValue("spanprof.resource.source", source));

            var res = new PbWriter();
            dropped = 0;
            int room = budget - extra.Length - 16; // the resource's own tag and length, the dropped count
            foreach (KeyValuePair<string, object> kv in resource)
            {
                PbWriter? one = KeyValue(kv.Key, kv.Value);
                if (one == null || res.Length + one.Length + 4 > room)
                {
                    dropped++;
                    continue;
                }
                res.Message(1, one);
            }
            if (dropped > 0)
                res.VarintField(2, (ulong)dropped);

            var top = new PbWriter();
            top.Message(1, res);
            top.Append(extra);
            return top.ToArray();
        }

        private static PbWriter? KeyValue(string key, object? value, int max = AttrMax)
        {
            if (string.IsNullOrEmpty(key) || value == null || Encoding.UTF8.GetByteCount(key) > AttrMax)
                return null;
            PbWriter v = AnyValue(value, 0);
            if (v.Length > max)
                return null;
            var kv = new PbWriter();
            kv.String(1, key);
            kv.Message(2, v);
            return kv;
        }

        private static PbWriter AnyValue(object value, int depth)
        {
            var w = new PbWriter();
            switch (value)
            {
                case string s:
                    w.String(1, s);
                    break;
                case bool b:
                    w.VarintField(2, b ? 1UL : 0UL);
                    break;
                case sbyte or short or int or long or byte or ushort or uint:
                    w.VarintField(3, (ulong)Convert.ToInt64(value, CultureInfo.InvariantCulture));
                    break;
                case ulong u when u <= long.MaxValue:
                    w.VarintField(3, u);
                    break;
                case double or float:
                    w.Fixed64Field(4, (ulong)BitConverter.DoubleToInt64Bits(Convert.ToDouble(value, CultureInfo.InvariantCulture)));
                    break;
                case IEnumerable list when depth == 0:
                    var arr = new PbWriter();
                    foreach (object? e in list)
                        arr.Message(1, AnyValue(e ?? "", depth + 1));
                    w.Message(5, arr);
                    break;
                default:
                    w.String(1, Convert.ToString(value, CultureInfo.InvariantCulture) ?? "");
                    break;
            }
            return w;
        }
    }

    /// <summary>Protobuf wire format, the few pieces the process context needs.</summary>
    internal sealed class PbWriter
    {
        private byte[] _b = new byte[64];
        private int _n;

        public int Length => _n;

        private void Ensure(int more)
        {
            if (_n + more > _b.Length)
                Array.Resize(ref _b, Math.Max(_b.Length * 2, _n + more));
        }

        private void Varint(ulong v)
        {
            Ensure(10);
            while (v >= 0x80)
            {
                _b[_n++] = (byte)(v | 0x80);
                v >>= 7;
            }
            _b[_n++] = (byte)v;
        }

        private void Tag(int field, int wireType) => Varint((ulong)(((uint)field << 3) | (uint)wireType));

        public void VarintField(int field, ulong v)
        {
            Tag(field, 0);
            Varint(v);
        }

        public void Fixed64Field(int field, ulong v)
        {
            Tag(field, 1);
            Ensure(8);
            for (int i = 0; i < 8; i++)
                _b[_n++] = (byte)(v >> (8 * i));
        }

        public void BytesField(int field, ReadOnlySpan<byte> bytes)
        {
            Tag(field, 2);
            Varint((ulong)bytes.Length);
            Ensure(bytes.Length);
            bytes.CopyTo(_b.AsSpan(_n));
            _n += bytes.Length;
        }

        public void String(int field, string s) => BytesField(field, Encoding.UTF8.GetBytes(s));

        public void Message(int field, PbWriter m) => BytesField(field, m._b.AsSpan(0, m._n));

        public void MessageIf(int field, PbWriter? m)
        {
            if (m != null)
                Message(field, m);
        }

        public void Append(PbWriter m)
        {
            Ensure(m._n);
            m._b.AsSpan(0, m._n).CopyTo(_b.AsSpan(_n));
            _n += m._n;
        }

        public byte[] ToArray() => _b.AsSpan(0, _n).ToArray();
    }
}
