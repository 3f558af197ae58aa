#!/usr/bin/env python3
"""fake_dotnet.py: an idle process that passes for .NET, for tests/integration/stalls.sh.

It maps a file named libcoreclr.so (what spanprof detects .NET by) and listens on a diagnostics
socket in /tmp that accepts connections (the kernel's backlog) and never answers; with
"enable-only", it answers EnablePerfMap with OK and nothing else (DisablePerfMap at spanprof's
exit then waits for its timeout), and prints "EnablePerfMap" for each it got.
The fake libcoreclr.so carries the runtime's version string (perfmap/rtversion.h), that of
FAKE_CORECLR_VERSION (a file version, default 10.0.1226.42308: 10.0.12); "none" leaves it out.
Usage: fake_dotnet.py DIR SECONDS [enable-only]; prints its pid once set up. DIR holds the fake
libcoreclr.so (one per process: the version is written into it).
"""
import mmap
import os
import signal
import socket
import sys
import time

# SIGTERM (the tests' stop) unwinds, so the socket below is removed.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

lib = os.path.join(sys.argv[1], "libcoreclr.so")
version = os.environ.get("FAKE_CORECLR_VERSION", "10.0.1226.42308")
with open(lib, "wb") as f:
    data = bytearray(4096)
    if version != "none":
        sccsid = f"@(#)Version {version} @Commit: 0123456789abcdef0123456789abcdef01234567\0"
        data[1024:1024 + len(sccsid)] = sccsid.encode()
    f.write(data)
f = open(lib, "rb")
m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
path = f"/tmp/dotnet-diagnostic-{os.getpid()}-1-socket"
# A socket left by an earlier process with this pid (killed, pids wrapped) is stale: this pid is
# ours now.
try:
    os.unlink(path)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(128)
print(os.getpid(), flush=True)
end = time.monotonic() + float(sys.argv[2])
try:
    held = []
    while len(sys.argv) > 3 and sys.argv[3] == "enable-only" and time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            c, _ = s.accept()
        except TimeoutError:
            break
        req = c.recv(64)
        if len(req) >= 18 and req[16] == 0x04 and req[17] == 0x05:  # Process, EnablePerfMap
            print("EnablePerfMap", flush=True)
            # DOTNET_IPC_V1 header (magic, u16 size, set 0xFF Server, id 0x00 OK), hresult 0
            c.sendall(b"DOTNET_IPC_V1\0" + (24).to_bytes(2, "little") + b"\xff\x00\0\0" + b"\0" * 4)
            c.close()
        else:
            held.append(c)  # never answered
    time.sleep(max(0, end - time.monotonic()))
finally:
    os.unlink(path)
