#!/usr/bin/env python3
"""fake_dotnet.py: an idle process that passes for .NET, for tests/integration/stalls.sh.

It maps a file named libcoreclr.so (what spanprof detects .NET by) and listens on a diagnostics
socket in /tmp that accepts connections (the kernel's backlog) and never answers.
Usage: fake_dotnet.py DIR SECONDS; prints its pid once set up. DIR holds the fake libcoreclr.so.
"""
import mmap
import os
import socket
import sys
import time

lib = os.path.join(sys.argv[1], "libcoreclr.so")
with open(lib, "wb") as f:
    f.write(b"\0" * 4096)
f = open(lib, "rb")
m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
path = f"/tmp/dotnet-diagnostic-{os.getpid()}-1-socket"
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(128)
print(os.getpid(), flush=True)
try:
    time.sleep(float(sys.argv[2]))
finally:
    os.unlink(path)
