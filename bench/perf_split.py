#!/usr/bin/env python3
"""bench/perf_split.py - where a proxy's CPU goes by system call and side: splits the samples of a
`perf record --call-graph dwarf` profile of nutcrackers into its reads and writes on the client side
and on the server side, epoll_wait, the batch wait and the rest, each in kernel and user space, and
says how many of each group's samples send a TCP segment (`__tcp_transmit_skb`: on loopback the
sender also runs the receiver's input) or wake a process (`sock_def_readable`).

    perf record -e cpu-clock -F 1999 --call-graph dwarf,32768 -p PROXY_PID -o g.data   # ^C after the load
    perf script -i g.data > g.txt
    python3 bench/perf_split.py g.txt

The stack needs the whole of `conn_writev`'s frame (its iovec array): 8 KB of stack is too little
to see who called it, 32 KB is enough. Reads no other file; prints a table in percent of all
samples.
"""
import collections
import sys

# (group, the function of the stack that names it), first match wins
IO_GROUPS = [
    ("conn_writev", (("client_write", "client"), ("client_flush", "client"),
                     ("server_write", "server"), ("server_flush", "server")), "writev"),
    ("conn_recv", (("client_on_readable", "client"), ("server_on_readable", "server")), "read"),
]
OTHER_GROUPS = [("epoll_wait", "epoll_wait"), ("batch_wait_run", "batch wait"), ("nanosleep", "batch wait")]
MARKS = [("__tcp_transmit_skb", "sends a segment"), ("sock_def_readable", "wakes a reader")]


def stacks(path):
    """Each sample's functions, innermost first, and whether it was taken in the kernel."""
    with open(path, errors="replace") as f:
        text = f.read()
    for block in text.split("\n\n"):
        lines = [l.strip() for l in block.strip().split("\n")[1:] if l.strip()]
        if not lines:
            continue
        funcs = [l.split()[1].split("+")[0] if len(l.split()) > 1 else "" for l in lines]
        yield funcs, lines[0].startswith("ffffffff")


def group_of(funcs):
    present = set(funcs)
    for anchor, callers, call in IO_GROUPS:
        if anchor in present:
            side = next((s for fn, s in callers if fn in present), "?")
            return f"{call}: {side}"
    for fn, name in OTHER_GROUPS:
        if fn in present:
            return name
    return "other"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench/perf_split.py PERF_SCRIPT_OUTPUT")
    count = collections.Counter()
    marked = collections.Counter()
    total = 0
    for funcs, kernel in stacks(sys.argv[1]):
        total += 1
        g = group_of(funcs)
        count[(g, kernel)] += 1
        for fn, mark in MARKS:
            if fn in funcs:
                marked[(g, mark)] += 1
    if total == 0:
        sys.exit("no samples")
    groups = sorted({g for g, _ in count}, key=lambda g: -(count[(g, True)] + count[(g, False)]))
    print(f"{total} samples, percent of all")
    print("| group | kernel | user | " + " | ".join(m for _, m in MARKS) + " |")
    print("|---|---|---|" + "---|" * len(MARKS))
    for g in groups:
        cells = [f"{100 * count[(g, True)] / total:.1f}", f"{100 * count[(g, False)] / total:.1f}"]
        cells += [f"{100 * marked[(g, m)] / total:.1f}" for _, m in MARKS]
        print(f"| {g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
