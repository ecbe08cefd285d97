#!/usr/bin/env python3
"""Issue exactly N O_DIRECT reads and M O_DIRECT writes of BS bytes to a block device.

Prints its pid and waits for a line on stdin before starting (so the tracer can be attached to
it first); prints "done" when every I/O has completed. Offsets cycle through the first SPAN
bytes, BS-aligned, so no request merges with another (each pread/pwrite waits for the last).
"""
import mmap
import os
import sys


def main():
    path, nreads, nwrites, bs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    span = int(sys.argv[5]) if len(sys.argv) > 5 else 64 << 20
    print(os.getpid(), flush=True)
    sys.stdin.readline()
    buf = mmap.mmap(-1, bs)  # page-aligned, as O_DIRECT needs
    buf.write(b"\xa5" * bs)
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    try:
        slots = span // bs
        for i in range(nreads):
            if os.preadv(fd, [buf], (i % slots) * bs) != bs:
                sys.exit("short read")
        for i in range(nwrites):
            if os.pwritev(fd, [buf], ((i * 7) % slots) * bs) != bs:
                sys.exit("short write")
    finally:
        os.close(fd)
    print("done", flush=True)


if __name__ == "__main__":
    main()
