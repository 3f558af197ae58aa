// TableTests.cs: the memfd table: header, slot claim (hash + 8 probes), reclaim of dead owners' slots,
// a tid reused by a new thread, the slots_full counter, release on disable, and the key table.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using SpanProfHook;
using Xunit;

namespace SpanProfHookTests
{
    public unsafe class TableTests
    {
        // Thread ids above any pid_max (2^22): /proc/self/task/<tid> never exists, so an owner with
        // such a tid is a thread that has exited.
        private const uint DeadBase = 0x7f000000;

        private static Table New(uint slots = 16) => Table.Create(slots, null, out string? e) ?? throw new Exception(e);

        private static uint Index(Table t, uint tid) => (tid * Table.SlotHash) & (t.SlotCount - 1);

        /// <summary>n distinct dead tids whose probe sequences all start at the same index.</summary>
        private static uint[] Colliding(Table t, int n)
        {
            var res = new List<uint>();
            uint want = Index(t, DeadBase);
            for (uint tid = DeadBase; res.Count < n; tid++)
                if (Index(t, tid) == want)
                    res.Add(tid);
            return res.ToArray();
        }

        private static uint Tid(byte* slot) => *(uint*)slot;
        private static ulong Word(byte* slot) => *(ulong*)slot;
        private static ulong Start(byte* slot) => *(ulong*)(slot + Table.OffSlotStartTicks);
        private static int IndexOf(Table t, byte* slot) => (int)((slot - t.Slot(0)) / t.SlotSize);

        [Theory]
        [InlineData(null, 4096u)]
        [InlineData("", 4096u)]
        [InlineData("junk", 4096u)]
        [InlineData("0", 4096u)]
        [InlineData("-3", 4096u)]
        [InlineData("1", 16u)]
        [InlineData("16", 16u)]
        [InlineData("17", 32u)]
        [InlineData(" 1000 ", 1024u)]
        [InlineData("65536", 65536u)]
        [InlineData("10000000", 65536u)]
        public void SlotCountIsAPowerOfTwoIn16To65536(string? env, uint want) => Assert.Equal(want, Table.SlotCountFor(env));

        [Fact]
        public void SlotSizeIsHeadPlusRecordRoundedTo8() => Assert.Equal(656u, Table.SlotSizeFor(Table.RecordMax));

        [Fact]
        public void AThreadClaimsTheSlotAtItsHash()
        {
            Table t = New();
            byte* s = t.ClaimSlot(DeadBase + 5, 77);
            Assert.True(s != null);
            Assert.Equal((int)Index(t, DeadBase + 5), IndexOf(t, s));
            Assert.Equal(DeadBase + 5, Tid(s));
            Assert.Equal(77UL, Start(s));
            Assert.Equal(0UL, Word(s) & Table.BusyBit); // busy only while the claim is written
            Assert.Equal(Table.GenOne, Word(s) & Table.GenMask); // first claim: generation 1
            Assert.Equal(0, s[Table.SlotHead + RecordEncoder.OffValid]);
        }

        [Fact]
        public void CollidingThreadsProbeTheNextSlots()
        {
            Table t = New();
            uint[] tids = Colliding(t, 3);
            // Owners made to look alive: my own tid and start time (the liveness check reads
            // /proc/self/task/<tid>/stat), so that no claimant may take their slots.
            uint me = (uint)Native.GetTid();
            ulong myStart = (ulong)t.CurrentThreadStartTicks();
            int first = (int)Index(t, tids[0]);
            for (int i = 0; i < 3; i++)
            {
                byte* s = t.ClaimSlot(tids[i], 1);
                Assert.Equal((first + i) % 16, IndexOf(t, s));
                Forge(s, me, myStart);
            }
        }

        private static void Forge(byte* slot, uint tid, ulong start)
        {
            *(ulong*)slot = (*(ulong*)slot & Table.GenMask) | tid;
            *(ulong*)(slot + 8) = start;
        }

        [Fact]
        public void ADeadOwnersSlotIsReclaimed()
        {
            Table t = New();
            uint[] tids = Colliding(t, 2);
            byte* a = t.ClaimSlot(tids[0], 1);         // tids[0] "exited" (it never existed)
            byte* b = t.ClaimSlot(tids[1], 9);
            Assert.True(a == b);                          // same slot, taken over
            Assert.Equal(tids[1], Tid(b));
            Assert.Equal(9UL, Start(b));
            Assert.Equal(2 * Table.GenOne, Word(b) & Table.GenMask);
        }

        [Fact]
        public void ALiveOwnersSlotIsNotTaken()
        {
            Table t = New();
            uint me = (uint)Native.GetTid();
            ulong myStart = (ulong)t.CurrentThreadStartTicks();
            uint[] tids = Colliding(t, 2);
            byte* a = t.ClaimSlot(tids[0], 1);
            Forge(a, me, myStart);                        // owned by a live thread (this one)
            byte* b = t.ClaimSlot(tids[1], 1);
            Assert.True(b != null && b != a);
            Assert.Equal((IndexOf(t, a) + 1) % 16, IndexOf(t, b));
            Assert.Equal(me, Tid(a));
            Assert.Equal(myStart, Start(a));
        }

        [Fact]
        public void ALiveTidWithAnotherStartTimeIsAnExitedThread()
        {
            // The owner's tid exists, but it is a newer thread that reuses the number: the slot's
            // thread has exited and its slot is reclaimed.
            Table t = New();
            uint me = (uint)Native.GetTid();
            ulong myStart = (ulong)t.CurrentThreadStartTicks();
            uint[] tids = Colliding(t, 2);
            byte* a = t.ClaimSlot(tids[0], 1);
            Forge(a, me, myStart - 1);
            byte* b = t.ClaimSlot(tids[1], 5);
            Assert.True(a == b);
            Assert.Equal(tids[1], Tid(b));
        }

        [Fact]
        public void ANewThreadWithADeadThreadsTidTakesItsSlotBack()
        {
            // Pass 1: a slot holding my tid (an exited thread's, same number) is mine again, even
            // when a free slot comes earlier in the probe sequence.
            Table t = New();
            uint[] tids = Colliding(t, 2);
            uint me = (uint)Native.GetTid();
            ulong myStart = (ulong)t.CurrentThreadStartTicks();
            byte* a = t.ClaimSlot(tids[0], 1);
            Forge(a, me, myStart);
            byte* old = t.ClaimSlot(tids[1], 1);          // the second probe
            Forge(a, 0, 0);                               // the first probe is free again
            byte* again = t.ClaimSlot(tids[1], 2);
            Assert.True(again == old);
            Assert.Equal(2UL, Start(again));
        }

        [Fact]
        public void ASlotHeldByTheSameTidIsReusedFirst()
        {
            Table t = New();
            uint[] tids = Colliding(t, 2);
            byte* first = t.ClaimSlot(tids[1], 1);      // at the first probe
            byte* again = t.ClaimSlot(tids[1], 2);      // the same tid again (a new thread)
            Assert.True(first == again);
            Assert.Equal(2UL, Start(again));
        }

        [Fact]
        public void NoFreeSlotWithinEightProbesIsCounted()
        {
            Table t = New();
            uint me = (uint)Native.GetTid();
            ulong myStart = (ulong)t.CurrentThreadStartTicks();
            uint[] tids = Colliding(t, 9);
            for (int i = 0; i < 8; i++)
            {
                byte* s = t.ClaimSlot(tids[i], 1);
                Assert.True(s != null);
                Forge(s, me, myStart); // alive
            }
            Assert.Equal(0UL, t.SlotsFull);
            Assert.True(t.ClaimSlot(tids[8], 1) == null);
            Assert.Equal(1UL, t.SlotsFull);
            Assert.Equal(1UL, *(ulong*)(t.Base + Table.OffSlotsFull));
        }

        [Fact]
        public void ABusySlotIsSkipped()
        {
            Table t = New();
            uint[] tids = Colliding(t, 2);
            byte* a = t.ClaimSlot(tids[0], 1);
            *(ulong*)a |= Table.BusyBit; // a claimant is writing start_ticks
            byte* b = t.ClaimSlot(tids[1], 1);
            Assert.True(b != null && b != a);
        }

        [Fact]
        public void ConcurrentClaimsNeverShareASlot()
        {
            Table t = New(64);
            uint[] tids = Colliding(t, 8);
            var got = new long[8];
            Parallel.For(0, 8, i => got[i] = (long)t.ClaimSlot(tids[i], (ulong)i + 1));
            Assert.All(got, g => Assert.NotEqual(0, g));
            // Dead owners may be displaced by later claimants, but each slot has one owner at the end.
            var owners = Enumerable.Range(0, 64).Select(i => Tid(t.Slot((uint)i))).Where(x => x != 0).ToList();
            Assert.Equal(owners.Count, owners.Distinct().Count());
        }

        [Fact]
        public void ReleaseAllFreesEverySlotAndMarksTheHeader()
        {
            Table t = New();
            var slots = Enumerable.Range(0, 5).Select(i => (long)t.ClaimSlot(DeadBase + 100 + (uint)i * 7, 1)).ToList();
            t.ReleaseAll();
            Assert.Equal(Table.FlagDisabled, *(uint*)(t.Base + Table.OffFlags) & Table.FlagDisabled);
            for (uint i = 0; i < t.SlotCount; i++)
            {
                Assert.Equal(0u, Tid(t.Slot(i)));
                Assert.Equal(0UL, Word(t.Slot(i)) & Table.BusyBit);
            }
            foreach (long s in slots)
                Assert.Equal(2 * Table.GenOne, Word((byte*)s) & Table.GenMask); // freed = a new generation
        }

        [Fact]
        public void TheMappingIsOneSharedMemfd()
        {
            Table t = New();
            string start = ((ulong)t.Base).ToString("x");
            var line = File.ReadAllLines("/proc/self/maps").Single(l => l.StartsWith(start + "-", StringComparison.Ordinal));
            Assert.Contains("rw-s", line);
            Assert.Contains("/memfd:spanprof-ctx", line);
        }

        // ---- key table ----------------------------------------------------------------------------

        private static List<string> Entries(Table t)
        {
            var names = new List<string>();
            byte* p = t.Base + *(uint*)(t.Base + Table.OffKeysOffset);
            uint n = *(uint*)(t.Base + Table.OffKeysCount);
            for (uint i = 0; i < n; i++)
            {
                names.Add(Encoding.UTF8.GetString(p + 1, p[0]));
                p += 1 + p[0];
            }
            return names;
        }

        [Fact]
        public void TheKeyTableStartsWithTheFixedKeys()
        {
            Table t = New();
            Assert.Equal(new[] { "local_root_span_id", "span_name" }, Entries(t));
            Assert.Equal(Table.KeysOffset, (int)*(uint*)(t.Base + Table.OffKeysOffset));
            Assert.Equal(Table.KeysSize, (int)*(uint*)(t.Base + Table.OffKeysSize));
        }

        [Fact]
        public void AKeyIsAppendedOnceAndKeepsItsIndex()
        {
            Table t = New();
            var published = new List<string[]>();
            t.KeysChanged = names => published.Add(names);
            Assert.Equal(Table.KeyUser, t.KeyIndex("tenant"));
            Assert.Equal(Table.KeyUser, t.KeyIndex("tenant"));
            Assert.Equal(Table.KeyUser + 1, t.KeyIndex("région"));
            Assert.Equal(Table.KeySpanName, t.KeyIndex("span_name")); // a fixed key by name: its index
            Assert.Equal(new[] { "local_root_span_id", "span_name", "tenant", "région" }, Entries(t));
            Assert.Equal(4, t.KeysCount);
            Assert.Equal(t.KeyNames(), Entries(t).ToArray());
            // The process context hears of each new key once, with every name by index.
            Assert.Equal(2, published.Count);
            Assert.Equal(new[] { "local_root_span_id", "span_name", "tenant", "région" }, published[1]);
        }

        [Theory]
        [InlineData(0)]
        [InlineData(256)]
        public void AKeyOf0OrMoreThan255BytesIsRefused(int len)
        {
            Table t = New();
            Assert.Equal(-1, t.KeyIndex(new string('k', len)));
            Assert.Equal(2, t.KeysCount);
        }

        [Fact]
        public void A255ByteKeyFits()
        {
            Table t = New();
            Assert.Equal(2, t.KeyIndex(new string('k', 255)));
            Assert.Equal(255, Entries(t)[2].Length);
        }

        [Fact]
        public void AtMost255KeysInAll()
        {
            Table t = New();
            for (int i = 0; i < Table.MaxKeys - 2; i++)
                Assert.Equal(i + 2, t.KeyIndex("k" + i));
            Assert.Equal(-1, t.KeyIndex("one-too-many"));
            Assert.Equal(Table.MaxKeys, t.KeysCount);
            Assert.Equal(Table.MaxKeys, Entries(t).Count);
        }

        [Fact]
        public void TheKeyBytesAreBoundedByKeysSize()
        {
            Table t = New();
            // 1 + 18 + 1 + 9 bytes used; each 255-byte key takes 256: 63 fit in 16384.
            int added = 0;
            while (t.KeyIndex(added.ToString("D3") + new string('k', 252)) >= 0)
                added++;
            Assert.Equal((Table.KeysSize - 29) / 256, added);
            Assert.Equal(2 + added, t.KeysCount);
            Assert.Equal(Table.KeySpanName, t.KeyIndex("span_name")); // known keys still resolve
        }

        [Fact]
        public void ConcurrentKeyLookupsAgree()
        {
            Table t = New();
            var idx = new int[16][];
            Parallel.For(0, 16, i => idx[i] = Enumerable.Range(0, 40).Select(k => t.KeyIndex("key" + (k * 7 + i) % 40)).ToArray());
            Assert.Equal(42, t.KeysCount);
            var byName = new Dictionary<string, int>();
            for (int i = 0; i < 16; i++)
                for (int k = 0; k < 40; k++)
                {
                    string name = "key" + (k * 7 + i) % 40;
                    if (byName.TryGetValue(name, out int prev))
                        Assert.Equal(prev, idx[i][k]);
                    else
                        byName[name] = idx[i][k];
                }
            Assert.Equal(Entries(t).Count, Entries(t).Distinct().Count());
        }
    }
}
