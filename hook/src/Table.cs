// Table.cs: the shared-memory thread table (ABI v1, bpf/profiler.h and hook/README.md): header, slots, keys.
using System;
using System.Collections.Concurrent;
using System.Text;
using System.Threading;

namespace SpanProfHook
{
    internal sealed unsafe class Table
    {
        // Mirrors of bpf/profiler.h; a change there is an ABI change here. tests/hook checks every one
        // of them (and the header offsets below) against the header, compiled.
        public const uint Abi = 1;              // SP_CTX_ABI
        public const string Magic = "SPANPROF"; // SP_CTX_MAGIC
        public const int UserHz = 100;          // SP_USER_HZ
        public const int Probes = 8;            // SP_CTX_PROBES
        public const int SlotHead = 16;         // SP_SLOT_HEAD
        public const int RecordMax = 640;       // SP_CTX_MAX
        public const int RecordHead = 28;       // SP_CTX_HEAD
        public const int HeaderSize = 80;       // sizeof(struct sp_ctx_header)
        public const int MaxSlots = 65536;      // SP_CTX_MAX_SLOTS
        public const int MaxKeys = 255;         // SP_CTX_MAX_KEYS
        public const int DefaultSlots = 4096;
        public const int KeysOffset = 128;
        public const int KeysSize = 16384;
        public const uint FlagDisabled = 1;     // header.flags: the hook gave up, slots were freed
        public const string MemfdName = "spanprof-ctx"; // SP_CTX_MEMFD_NAME
        public const int PrctlAnnounce = 0x53504354;    // SP_PRCTL_ANNOUNCE
        public const uint SlotHash = 2654435761u; // SP_SLOT_HASH(tid) = tid * this

        // Attribute keys with a fixed index (SP_KEY_*); user label keys follow from KeyUser.
        public const int KeyLocalRootSpanId = 0, KeySpanName = 1, KeyUser = 2;

        // Header field offsets (struct sp_ctx_header).
        internal const int OffMagic = 0, OffAbi = 8, OffHeaderSize = 12, OffSlotCount = 16, OffSlotSize = 20,
            OffSlotsOffset = 24, OffKeysOffset = 28, OffKeysSize = 32, OffKeysCount = 36, OffPid = 40,
            OffFlags = 44, OffPublishedAt = 48, OffSlotsFull = 56, OffReserved = 64;

        // struct sp_slot_head field offsets.
        internal const int OffSlotTid = 0, OffSlotReserved = 4, OffSlotStartTicks = 8;

        // The slot head's first 8 bytes are one word: tid (low 32 bits) and, in the "reserved" field,
        // a claim generation (bits 0..30) plus a busy bit (31) held while a claimant writes
        // start_ticks. Every claim CASes the whole word, so two claimants of one slot cannot both win.
        internal const ulong BusyBit = 1UL << 63;
        internal const ulong GenOne = 1UL << 32;
        internal const ulong GenMask = 0x7FFF_FFFFUL << 32;

        public readonly byte* Base;
        public readonly nuint Size;
        public readonly uint SlotCount;
        public readonly uint SlotSize;
        private readonly byte* _slots;
        private readonly byte* _keys;
        private readonly long _timensOffsetTicks;
        private readonly bool[] _everClaimed;
        private readonly ConcurrentDictionary<string, int> _keyIndex = new(StringComparer.Ordinal);
        private readonly object _keyLock = new();
        private readonly System.Collections.Generic.List<string> _keyNames = new();
        private int _keysUsed;
        private int _keysCount;

        private Table(byte* mapBase, nuint size, uint slotCount, uint slotSize, uint slotsOffset)
        {
            Base = mapBase;
            Size = size;
            SlotCount = slotCount;
            SlotSize = slotSize;
            _slots = mapBase + slotsOffset;
            _keys = mapBase + KeysOffset;
            _everClaimed = new bool[slotCount];
            _timensOffsetTicks = Native.ReadBoottimeOffsetTicks();
        }

        public static uint SlotSizeFor(int recordMax) => (uint)((SlotHead + recordMax + 7) & ~7);

        /// <summary>Slots for n threads: next power of two, clamped to [16, 65536].</summary>
        public static uint SlotCountFor(string? env)
        {
            if (string.IsNullOrWhiteSpace(env) || !long.TryParse(env.Trim(), out long n) || n <= 0)
                return DefaultSlots;
            if (n >= MaxSlots)
                return MaxSlots;
            uint c = 16;
            while (c < n)
                c <<= 1;
            return c;
        }

        /// <summary>Creates and maps the memfd once; null and a reason on failure.</summary>
        public static Table? Create(uint slotCount, string? fault, out string? error)
        {
            error = null;
            int page = Environment.SystemPageSize;
            uint slotSize = SlotSizeFor(RecordMax);
            uint slotsOffset = (uint)((KeysOffset + KeysSize + page - 1) / page * page);
            ulong size = slotsOffset + (ulong)slotCount * slotSize;
            size = (size + (ulong)page - 1) / (ulong)page * (ulong)page;

            byte* name = stackalloc byte[32];
            Native.FormatPathLiteral(name, MemfdName);
            int fd = fault == "memfd" ? -1 : Native.memfd_create(name, Native.MFD_CLOEXEC);
            if (fd < 0)
            {
                error = $"memfd_create failed (errno {(fault == "memfd" ? 1 : Native.LastErrno)})";
                return null;
            }
            if (fault == "ftruncate" || Native.ftruncate(fd, (long)size) != 0)
            {
                error = $"ftruncate({size}) failed (errno {(fault == "ftruncate" ? 28 : Native.LastErrno)})";
                Native.close(fd);
                return null;
            }
            // Mapped once, whole: /proc/<pid>/maps then shows one "/memfd:spanprof-ctx (deleted)"
            // line whose start is the header. Pages are allocated only when a slot is first written.
            IntPtr p = fault == "mmap" ? new IntPtr(-1)
                : Native.mmap(IntPtr.Zero, (nuint)size, Native.PROT_READ | Native.PROT_WRITE, Native.MAP_SHARED, fd, 0);
            int mmapErr = Native.LastErrno;
            Native.close(fd);
            if (p == new IntPtr(-1))
            {
                error = $"mmap({size}) failed (errno {(fault == "mmap" ? 12 : mmapErr)})";
                return null;
            }

            var t = new Table((byte*)p, (nuint)size, slotCount, slotSize, slotsOffset);
            byte* h = t.Base;
            *(uint*)(h + OffAbi) = Abi;
            *(uint*)(h + OffHeaderSize) = HeaderSize;
            *(uint*)(h + OffSlotCount) = slotCount;
            *(uint*)(h + OffSlotSize) = slotSize;
            *(uint*)(h + OffSlotsOffset) = slotsOffset;
            *(uint*)(h + OffKeysOffset) = KeysOffset;
            *(uint*)(h + OffKeysSize) = KeysSize;
            *(uint*)(h + OffPid) = (uint)Environment.ProcessId;
            *(ulong*)(h + OffPublishedAt) = (ulong)((DateTime.UtcNow - DateTime.UnixEpoch).Ticks * 100);
            t.AddKeyLocked("local_root_span_id"); // KeyLocalRootSpanId
            t.AddKeyLocked("span_name");          // KeySpanName
            // The magic goes last: a reader that sees it sees a complete header.
            Interlocked.MemoryBarrier();
            for (int i = 0; i < 8; i++)
                h[OffMagic + i] = (byte)Magic[i];
            Interlocked.MemoryBarrier();
            return t;
        }

        /// <summary>
        /// Tells a sampler the table is there (bpf/profiler.h, SP_PRCTL_ANNOUNCE): no kernel knows the
        /// option, so the call fails with EINVAL by design, and the kernel's tracepoint on unknown
        /// prctl options fires. Called once the process context is published too, so that one look
        /// at the process finds both.
        /// </summary>
        public void Announce() =>
            Native.prctl(PrctlAnnounce, (nuint)Base, Size, Abi, 0);

        public ulong SlotsFull => Volatile.Read(ref *(ulong*)(Base + OffSlotsFull));

        public int KeysCount => Volatile.Read(ref _keysCount);

        /// <summary>
        /// Called, with the key lock held, after a key was appended, with every key name by index:
        /// the process context republishes its key map before the new index is used in a record.
        /// </summary>
        public Action<string[]>? KeysChanged;

        /// <summary>Key names by index, as published in the key table.</summary>
        public string[] KeyNames()
        {
            lock (_keyLock)
                return _keyNames.ToArray();
        }

        internal byte* Slot(uint index) => _slots + (nuint)index * SlotSize;

        /// <summary>This thread's start time as the BPF side sees it (task->start_boottime in ticks).</summary>
        public long CurrentThreadStartTicks()
        {
            byte* path = stackalloc byte[64];
            Native.FormatPathLiteral(path, "/proc/thread-self/stat");
            long t = Native.ReadStatStartTicks(path);
            return t < 0 ? t : t - _timensOffsetTicks;
        }

        private long TaskStartTicks(uint tid)
        {
            byte* path = stackalloc byte[64];
            Native.FormatPath(path, "/proc/self/task/", (int)tid, "/stat");
            long t = Native.ReadStatStartTicks(path);
            return t < 0 ? t : t - _timensOffsetTicks;
        }

        /// <summary>
        /// Claims a slot for the calling thread (first use of a thread only: it reads /proc).
        /// Returns the slot address, or null when no slot is free within SP_CTX_PROBES probes
        /// (counted in header.slots_full).
        /// </summary>
        public byte* ClaimSlot(uint tid, ulong startTicks)
        {
            uint mask = SlotCount - 1;
            uint h = tid * SlotHash;

            // Pass 1: a slot already holding my tid belongs to a dead thread whose tid I reuse.
            for (uint k = 0; k < Probes; k++)
            {
                uint idx = (h + k) & mask;
                ulong* word = (ulong*)Slot(idx);
                ulong w = Volatile.Read(ref *word);
                if ((uint)w == tid && TryTake(idx, w, tid, startTicks))
                    return Slot(idx);
            }
            // Pass 2: a free slot, or one whose owner has exited.
            for (uint k = 0; k < Probes; k++)
            {
                uint idx = (h + k) & mask;
                ulong* word = (ulong*)Slot(idx);
                ulong w = Volatile.Read(ref *word);
                uint owner = (uint)w;
                if (owner == 0)
                {
                    if (TryTake(idx, w, tid, startTicks))
                        return Slot(idx);
                    continue;
                }
                if (owner == tid || (w & BusyBit) != 0)
                    continue;
                ulong ownerStart = Volatile.Read(ref *(ulong*)(Slot(idx) + 8));
                long live = TaskStartTicks(owner);
                bool dead = live == -1 || (live >= 0 && (ulong)live != ownerStart);
                if (dead && TryTake(idx, w, tid, startTicks))
                    return Slot(idx);
            }
            Interlocked.Increment(ref *(long*)(Base + OffSlotsFull));
            return null;
        }

        private bool TryTake(uint idx, ulong expected, uint tid, ulong startTicks)
        {
            byte* s = Slot(idx);
            ulong gen = ((expected & GenMask) + GenOne) & GenMask;
            ulong busy = BusyBit | gen | tid;
            if (Interlocked.CompareExchange(ref *(ulong*)s, busy, expected) != expected)
                return false;
            // While busy, no one else reclaims the slot and the reader's start_ticks check fails
            // (stale value), so the old record can't be attributed to this thread.
            Volatile.Write(ref s[SlotHead + RecordEncoder.OffValid], (byte)0);
            Interlocked.MemoryBarrier();
            Volatile.Write(ref *(ulong*)(s + 8), startTicks);
            Volatile.Write(ref *(ulong*)s, gen | tid);
            _everClaimed[idx] = true;
            return true;
        }

        /// <summary>Key index for a label name, publishing it on first use; -1 when the table is full.</summary>
        public int KeyIndex(string name)
        {
            if (_keyIndex.TryGetValue(name, out int idx))
                return idx;
            lock (_keyLock)
            {
                if (_keyIndex.TryGetValue(name, out idx))
                    return idx;
                idx = AddKeyLocked(name);
                if (idx >= 0)
                    KeysChanged?.Invoke(_keyNames.ToArray());
                return idx;
            }
        }

        private int AddKeyLocked(string name)
        {
            byte[] b = Encoding.UTF8.GetBytes(name);
            if (b.Length == 0 || b.Length > 255 || _keysCount >= MaxKeys || _keysUsed + 1 + b.Length > KeysSize)
                return -1;
            byte* p = _keys + _keysUsed;
            p[0] = (byte)b.Length;
            for (int i = 0; i < b.Length; i++)
                p[1 + i] = b[i];
            _keysUsed += 1 + b.Length;
            int idx = _keysCount;
            // Entries first, count last (release): a reader never sees a count past written entries.
            Volatile.Write(ref *(uint*)(Base + OffKeysCount), (uint)(idx + 1));
            Volatile.Write(ref _keysCount, idx + 1);
            _keyNames.Add(name);
            _keyIndex[name] = idx;
            return idx;
        }

        /// <summary>Gives every slot back (tid 0) and marks the header disabled.</summary>
        public void ReleaseAll()
        {
            uint* flags = (uint*)(Base + OffFlags);
            Volatile.Write(ref *flags, *flags | FlagDisabled);
            for (uint i = 0; i < SlotCount; i++)
            {
                if (!_everClaimed[i])
                    continue; // never touched: reading it would allocate the page
                ulong* word = (ulong*)Slot(i);
                ulong w = Volatile.Read(ref *word);
                Volatile.Write(ref *word, ((w & GenMask) + GenOne) & GenMask);
            }
        }
    }
}
