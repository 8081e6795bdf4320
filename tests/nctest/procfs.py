"""What /proc says about a process: its open descriptors and their TCP sockets, resident memory, CPU
time, read and write system calls, parent, threads, signal masks; the socket queues of
/proc/net/tcp (bytes a peer has not read yet), or of one socket asked of the kernel's sock_diag;
and a copy of another process's socket, to read its options. Linux only.

Threads: plain functions, any thread (each call reads /proc afresh).
"""
import contextlib
import ctypes
import os
import socket
import struct
from pathlib import Path

TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
              "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
              "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}


def status_field(pid, name, task=None):
    """The text of one line of /proc/PID/status (or of a thread's, /proc/PID/task/TID/status),
    after "name:"; KeyError when absent."""
    path = Path(f"/proc/{pid}") / (f"task/{task}/status" if task is not None else "status")
    for line in path.read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    raise KeyError(name)


def stat_fields(pid):
    """/proc/PID/stat after "pid (comm)": fields[0] is the state, fields[1] the parent, fields[11]
    and fields[12] utime and stime (stat(5) numbers them from 3). comm may hold spaces and
    parentheses, hence the split at the last ")"."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rfind(")") + 2:].split()


def parent_pid(pid):
    """The parent of pid, or None when pid is gone."""
    try:
        fields = stat_fields(pid)
    except OSError:
        return None
    return int(fields[1]) if len(fields) > 1 else None


def children(ppid):
    """Pids whose parent is ppid (a child subreaper's adopted orphans too)."""
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and parent_pid(int(entry.name)) == ppid:
            kids.append(int(entry.name))
    return kids


def cpu_ticks(pid):
    """utime + stime of the whole process (all threads), in clock ticks."""
    fields = stat_fields(pid)
    return int(fields[11]) + int(fields[12])


def io_calls(pid):
    """(syscr, syscw) of /proc/PID/io: the read-family (read, readv, pread) and write-family
    (write, writev, pwrite) system calls of the whole process, failed ones too (EAGAIN); recv*,
    send* and sendmsg are not counted."""
    fields = dict(line.split(": ", 1) for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["syscr"]), int(fields["syscw"])


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kb(pid):
    """Resident memory (VmRSS) in kB."""
    return int(status_field(pid, "VmRSS").split()[0])


def tasks(pid):
    """{thread id: thread name} of every thread of pid."""
    return {int(t.name): (t / "comm").read_text().strip() for t in Path(f"/proc/{pid}/task").iterdir()}


def task_counters(pid):
    """{thread id: {"name", "ticks" (utime + stime, clock ticks), "uticks" (utime alone),
    "minflt" (minor page faults),
    "syscr", "syscw" (read- and write-like system calls, /proc/PID/task/TID/io), "csw" (context
    switches, voluntary and not)}} of every thread of pid; a thread that ends meanwhile is left
    out."""
    out = {}
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (t / "stat").read_text()
            name = (t / "comm").read_text().strip()
            io = dict(line.split(": ") for line in (t / "io").read_text().splitlines())
            status = (t / "status").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()
        csw = sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches:" in line)
        out[int(t.name)] = {"name": name, "ticks": int(fields[11]) + int(fields[12]), "uticks": int(fields[11]),
                            "minflt": int(fields[7]),
                            "syscr": int(io["syscr"]), "syscw": int(io["syscw"]), "csw": csw}
    return out


def stopped(pid):
    """Whether every thread of pid is stopped (state T): a SIGSTOP reaches a process's threads one
    by one, and one that runs on another CPU may go on for a few milliseconds."""
    states = []
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (t / "stat").read_text()
        except OSError:  # a thread that just ended
            continue
        states.append(text[text.rfind(")") + 2:].split()[0])
    return bool(states) and all(s == "T" for s in states)


def signal_mask(pid, field, task=None):
    """A signal mask of /proc/PID/status (SigBlk, SigIgn, SigCgt, SigPnd, ShdPnd) as an int: bit
    signo - 1 for each signal."""
    return int(status_field(pid, field, task), 16)


def signals_caught(pid, signos):
    """True when pid has handlers for every signal in signos, so sending them cannot stop or kill
    it by their default action (False when pid is gone)."""
    try:
        mask = signal_mask(pid, "SigCgt")
    except (OSError, KeyError):
        return False
    return all(mask & (1 << (signo - 1)) for signo in signos)


@contextlib.contextmanager
def affinity_of_children(cpus):
    """Within the block, processes this thread starts may run only on cpus (they inherit the
    calling thread's mask, as under `taskset`); the mask is restored after."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def set_affinity(pid, cpus):
    """Pins every thread of pid to cpus (those that exist now)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:
            pass


def _proc_net_tcp():
    """The fields of every line of /proc/net/tcp and /proc/net/tcp6 (this network namespace)."""
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(path).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            yield line.split()


def tcp_sockets(listeners=False):
    """Every TCP socket of this network namespace but those in TIME_WAIT (closed, no owner), or
    with listeners=True only the listening ones: {inode: (state, local port, remote port, send
    queue bytes, receive queue bytes)}. The receive queue of a socket is what its owner has not
    read yet (for a listener: connections not accepted yet). Asked of sock_diag, which leaves the
    others out before it answers (the listeners alone it finds without a look at the
    connections): a connection storm leaves thousands of TIME_WAIT sockets for a minute, which
    made each look at /proc/net/tcp cost tens of ms of CPU in the waits that poll it (every proxy
    start's among them). /proc/net/tcp where sock_diag is missing."""
    table = _diag_tcp_sockets(LISTEN_STATE if listeners else DIAG_STATES)
    if table is not None:
        return table
    table = {}
    for f in _proc_net_tcp():
        if f[3] == "06" or (listeners and f[3] != "0A"):
            continue  # TIME_WAIT, or not listening
        tx, rx = (int(x, 16) for x in f[4].split(":"))
        table[f[9]] = (TCP_STATES.get(f[3], f[3]), int(f[1].rsplit(":", 1)[1], 16),
                       int(f[2].rsplit(":", 1)[1], 16), tx, rx)
    return table


TCP_TIMERS = {0: None, 1: "retransmit", 2: "keepalive", 3: "time_wait", 4: "probe"}


def tcp_timer(inode):
    """(the timer the kernel runs on TCP socket inode, seconds until it fires), from the
    "tr:tm->when" column of /proc/net/tcp(6): timer None when none runs; None when no such
    socket. Keepalive's timer is armed when the option is set, for its idle time."""
    for f in _proc_net_tcp():
        if f[9] == inode:
            kind, when = f[5].split(":")
            return TCP_TIMERS.get(int(kind, 16), kind), int(when, 16) / os.sysconf("SC_CLK_TCK")
    return None


def fds(pid, listeners=False):
    """The open descriptors of pid: [(fd, ("tcp", state, local port, remote port, inode))] for
    TCP sockets, [(fd, ("other", link target))] for the rest (pipes, eventfds, epoll, files);
    with listeners=True its listening TCP sockets are "tcp", its other ones "other"."""
    tcp = tcp_sockets(listeners)
    out = []
    for fd in sorted(os.listdir(f"/proc/{pid}/fd"), key=int):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        inode = target[8:-1] if target.startswith("socket:[") else None
        out.append((int(fd), ("tcp", *tcp[inode][:3], inode) if inode in tcp else ("other", target)))
    return out


def tcp_of(pid, listeners=False):
    """The TCP sockets of pid: [(state, local port, remote port, inode)] (listeners=True: the
    listening ones)."""
    return [d[1:] for _, d in fds(pid, listeners) if d[0] == "tcp"]


def conns_to(pid, port):
    """pid's connections to remote port: {local port: state}."""
    return {local: state for state, local, remote, _ in tcp_of(pid)
            if state != "LISTEN" and remote == port}


def unread(local_port, remote_port):
    """(bytes the owner of the socket local_port -> remote_port has not read, bytes it sent
    that its peer has not acknowledged), or None when there is no such socket."""
    for state, local, remote, tx, rx in tcp_sockets().values():
        if local == local_port and remote == remote_port and state != "LISTEN":
            return rx, tx
    return None


NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLMSG_ERROR = 2
INET_DIAG_NOCOOKIE = 0xFFFFFFFF

NLM_F_DUMP = 0x301  # NLM_F_REQUEST | NLM_F_ROOT | NLM_F_MATCH
NLMSG_DONE = 3
DIAG_STATES = 0xFFE & ~(1 << 6)  # every TCP state (1..11) but TIME_WAIT (6)
LISTEN_STATE = 1 << 10


def _diag_tcp_sockets(states):
    """tcp_sockets() of the states (a bit mask) from one sock_diag dump per address family; None
    without sock_diag."""
    table = {}
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
            for family in (socket.AF_INET, socket.AF_INET6):
                req = (struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, states)
                       + bytes(48))  # any socket id
                nl.send(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, 1, 0)
                        + req)
                if not _diag_read(nl, table):
                    return None
    except OSError:
        return None
    return table


def _diag_read(nl, table):
    """Reads one dump's inet_diag_msg records into table (as tcp_sockets()); False on an error."""
    while True:
        data = nl.recv(65536)
        if not data:
            return False
        at = 0
        while at + 16 <= len(data):
            length, kind = struct.unpack_from("=IH", data, at)
            if kind == NLMSG_DONE:
                return True
            if kind == NLMSG_ERROR or length < 16:
                return False
            msg = at + 16  # family, state, timer, retrans, then the 48-byte socket id
            state = TCP_STATES.get("%02X" % data[msg + 1], str(data[msg + 1]))
            local, remote = struct.unpack_from(">HH", data, msg + 4)
            rx, tx, _, inode = struct.unpack_from("=IIII", data, msg + 4 + 48 + 4)
            # a listener's "send queue" is its backlog's size here, 0 in /proc/net/tcp
            table[str(inode)] = (state, local, remote, 0 if state == "LISTEN" else tx, rx)
            at += (length + 3) & ~3


def tcp_queues(local_port, remote_port, host="127.0.0.1"):
    """(state, bytes the owner of the IPv4 socket host:local_port -> host:remote_port has not
    read, bytes it sent that its peer has not acknowledged), or None when there is no such
    socket. One netlink question about that one socket (sock_diag), some microseconds where
    unread() lists every socket: for waits polled thousands of times. Without
    sock_diag (a sandbox may lack it), unread()'s answer."""
    addr = socket.inet_aton(host) + bytes(12)
    req = (struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
           + struct.pack(">HH", local_port, remote_port) + addr + addr
           + struct.pack("=III", 0, INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE))
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
            nl.send(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 1, 1, 0) + req)
            data = nl.recv(4096)
    except OSError:
        for state, local, remote, tx, rx in tcp_sockets().values():
            if local == local_port and remote == remote_port and state != "LISTEN":
                return state, rx, tx
        return None
    if len(data) < 16 or struct.unpack_from("=H", data, 4)[0] == NLMSG_ERROR:
        return None  # no such socket (ENOENT)
    # struct inet_diag_msg: family, state, timer, retrans, the 48-byte socket id, expires, rqueue,
    # wqueue, uid, inode
    state = TCP_STATES.get("%02X" % data[16 + 1], str(data[16 + 1]))
    if state == "LISTEN":
        return None  # the kernel's lookup falls back on the listener of local_port
    rx, tx = struct.unpack_from("=II", data, 16 + 4 + 48 + 4)
    return state, rx, tx


SYS_PIDFD_GETFD = 438  # the same number on every Linux architecture


def socket_of(pid, fd):
    """A socket object on a duplicate of descriptor fd of process pid (pidfd_getfd, Linux >= 5.6;
    pid must be a child of ours, or we root), so that getsockopt reads the options that process
    set on it. Close it after use: the process's own descriptor stays open."""
    pidfd = os.pidfd_open(pid)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        dup = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if dup < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"pidfd_getfd({pid}, {fd}): {os.strerror(err)}")
    finally:
        os.close(pidfd)
    return socket.socket(fileno=dup)
