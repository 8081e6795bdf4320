#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets (tests/fuzz/corpus/<target>/) from the
hand-written inputs below; run it after editing them (`python3 tests/fuzz/seeds.py`).

A protocol seed is a 4-byte header (fuzz_feed.h: mbuf size, want_elems, servers, read sizes)
then the byte stream. The config seeds are the unit tests' good configs plus a few written here.
"""
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# the helper library (tests/nctest): this is where the seed writer finds it
sys.path.insert(0, str(HERE.parent))

from nctest.codec import resp  # noqa: E402

CORPUS = HERE / "corpus"
MBUF = {512: 0, 549: 1, 1024: 2, 4096: 3}


def header(mbuf=512, want=False, servers=3, reads=(0, 0, 0)):
    h0 = MBUF[mbuf] | (4 if want else 0) | ((servers - 1) << 3)
    return bytes([h0, *reads])


REDIS_REQ = {
    "get": resp("GET", "key"),
    "set": resp("SET", "key", "value", "EX", "10"),
    "mget": resp("MGET", "a", "b", "c", "d", "e", "f"),
    "mget_tags": resp("mget", "{user}:1", "{user}:2", "other"),
    "mset": resp("MSET", "a", "1", "b", "2", "c", "3", "d", "4"),
    "mset_odd": resp("MSET", "a", "1", "b"),
    "del": resp("DEL", "a", "b", "c", "a"),
    "exists": resp("EXISTS", "x", "y", "z"),
    "unlink_touch": resp("UNLINK", "p", "q") + resp("TOUCH", "p", "q", "r"),
    "eval": resp("EVAL", "return 1", "2", "k1", "k2", "arg"),
    "eval_nokey": resp("EVALSHA", "abc", "0"),
    "zunionstore": resp("ZUNIONSTORE", "dst", "2", "s1", "s2", "WEIGHTS", "1", "2"),
    "ping_quit": resp("PING") + resp("PING", "hello") + resp("QUIT"),
    "auth": resp("AUTH", "secret"),
    "unknown": resp("FLUSHALL") + resp("NOSUCHCOMMAND", "x"),
    "arity": resp("GET") + resp("GET", "a", "b"),
    "empty": b"*0\r\n*-1\r\n\r\n" + resp("GET", "k"),
    "inline": b"get a\r\nmget a b c\nmset k1 v1 k2 v2\r\nPING\r\n",
    "inline_blanks": b"  del\ta \t b  c \r\n\r\n",
    "long_name": resp("X" * 100, "k"),
    "big_value": resp("SET", "k", "v" * 1500),
    "binary_key": resp("GET", b"\x00\r\n\xff key"),
    "empty_key": resp("MGET", "", "", "z"),
    "pipeline": resp("SET", "a", "1") + resp("GET", "a") + resp("MGET", "a", "b") +
                resp("DEL", "a", "b") + resp("INCRBY", "n", "5"),
    "bad_len": b"*2\r\n$3\r\nGET\r\n$-5\r\n",
    "nested": b"*2\r\n*1\r\n$3\r\nGET\r\n",
    "no_crlf": b"*1\r\n$4\r\nPINGxx",
    "leading_zero": b"*02\r\n$3\r\nGET\r\n$1\r\na\r\n",
    "over_key_cap": b"*1048578\r\n$3\r\nDEL\r\n$1\r\na\r\n",
    "huge_count_reject": b"*1000000000\r\n$3\r\nGET\r\n$1\r\na\r\n",
    # the handshake the proxy answers (local()), HELLO and INFO sent to every server
    "handshake": resp("HELLO", "3", "AUTH", "default", "pw", "SETNAME", "app") +
                 resp("CLIENT", "SETINFO", "LIB-NAME", "redis-py") + resp("CLIENT", "SETINFO", "lib-ver", "8") +
                 resp("CLIENT", "SETNAME", "n") + resp("CLIENT", "GETNAME") + resp("CLIENT", "ID") +
                 resp("CLIENT", "INFO") + resp("CLIENT", "NO-EVICT", "on") + resp("CLIENT", "LIST") +
                 resp("ECHO", "e") + resp("SELECT", "0") + resp("INFO", "server") + resp("TIME") +
                 resp("RESET") + resp("HELLO") + resp("HELLO", "4") + resp("CLIENT"),
    "handshake_inline": b"hello 3\r\nclient setname x\r\ninfo keyspace\r\necho hi\r\nselect 1\r\nreset\r\n",
    # CLIENT LIST's filters (proto_list_filter: TYPE, ID with repeats, their errors)
    "client_list": resp("CLIENT", "LIST", "TYPE", "pubsub") + resp("CLIENT", "LIST", "ID", "3", "1", "3") +
                   resp("CLIENT", "LIST", "TYPE", "master") + resp("CLIENT", "LIST", "ID") +
                   resp("CLIENT", "LIST", "ID", "x") + resp("CLIENT", "LIST", "TYPE", "nope") +
                   resp("CLIENT", "LIST", "ID", "-1", "18446744073709551616") + resp("CLIENT", "LIST", "KILL") +
                   resp("client", "list", "type", "NORMAL", "id", "7"),
    # blocking commands: their timeout argument (msg.block_usec)
    "blocking": resp("BLPOP", "a", "b", "0") + resp("BZMPOP", "1.5", "2", "z1", "z2", "MIN", "COUNT", "3") +
                resp("XREAD", "COUNT", "1", "BLOCK", "100", "STREAMS", "s", "$") +
                resp("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">") +
                resp("BRPOP", "a", "2e-3") + resp("BLPOP", "a", "1" * 40) + resp("BLMPOP", "x", "1", "k", "LEFT"),
    "blocking_inline": b"blmove a b LEFT RIGHT 0.5\r\nbzpopmin z -1\r\nxread block 7 streams s 0\r\n",
    # XREAD's keys on several servers: no fragment, the merge answers the error (with BLOCK the
    # core answers it: the harness does not split a blocking command)
    "xread_several": resp("XREAD", "STREAMS", "a", "b", "c", "d", "e", "f", "0", "0", "0", "0", "0", "0") +
                     resp("XREAD", "BLOCK", "5", "STREAMS", "a", "b", "c", "d", "0", "0", "0", "0"),
}

REDIS_RSP = {
    "status": b"+OK\r\n+PONG\r\n",
    "error": b"-ERR unknown command\r\n-WRONGTYPE Operation against a key\r\n",
    "fatal": b"-LOADING Redis is loading the dataset in memory\r\n-BUSY script\r\n"
             b"-MASTERDOWN x\r\n-NOAUTH Authentication required.\r\n"
             b"-ERR max number of clients reached\r\n",
    "long_error": b"-ERR " + b"e" * 200 + b"\r\n",
    "integer": b":0\r\n:-1\r\n:9223372036854775807\r\n:-9223372036854775808\r\n",
    "bulk": b"$5\r\nhello\r\n$0\r\n\r\n$-1\r\n",
    "bulk_crlf": b"$4\r\n\r\n\r\n\r\n",
    "array": b"*3\r\n$1\r\na\r\n$-1\r\n:5\r\n",
    "nil_array": b"*-1\r\n*0\r\n",
    "nested": b"*2\r\n*2\r\n+a\r\n-b\r\n*1\r\n*1\r\n$1\r\nz\r\n",
    "mget_reply": b"*4\r\n$3\r\none\r\n$-1\r\n$3\r\ntwo\r\n$0\r\n\r\n",
    "big_bulk": b"$2000\r\n" + b"b" * 2000 + b"\r\n",
    "bad_type": b"?2\r\n",
    "bad_len": b"$-2\r\n",
    "deep": b"*1\r\n" * 40 + b":1\r\n",
    # RESP3 (a server connection after HELLO 3)
    "r3_map": b"%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n%0\r\n",
    "r3_set": b"~3\r\n+orange\r\n#t\r\n:100\r\n~0\r\n",
    "r3_push": b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n$9\r\nGet-Reply\r\n"
               b">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nkey\r\n",
    "r3_scalars": b"_\r\n#t\r\n#f\r\n,1.23\r\n,10\r\n,-1.5e+20\r\n,inf\r\n,-inf\r\n,nan\r\n"
                  b",-nan\r\n,NAN\r\n,nan(0x7ff)\r\n(3492890328409238509324850943850943825024385\r\n"
                  b"(-1\r\n",
    "r3_long_double": b",-" + b"1234567890" * 150 + b"." + b"5" * 300 + b"e-12\r\n",
    "r3_verbatim": b"=15\r\ntxt:Some string\r\n=4\r\nmkd:\r\n=6\r\ntxt:\r\n\r\n",
    "r3_blob_error": b"!21\r\nSYNTAX invalid syntax\r\n!7\r\nLOADING\r\n"
                     b"!46\r\nLOADING Redis is loading the dataset in memory\r\n!0\r\n\r\n",
    "r3_attribute": b"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
                    b"*2\r\n:2039123\r\n:9543892\r\n|1\r\n+ttl\r\n:3600\r\n:5\r\n"
                    b"|1\r\n+a\r\n+b\r\n-LOADING x\r\n",
    "r3_nested": b"*3\r\n:1\r\n:2\r\n|1\r\n+ttl\r\n:3600\r\n:3\r\n"
                 b"%2\r\n|1\r\n+a\r\n+b\r\n+key\r\n~2\r\n,1.5\r\n(12\r\n=5\r\ntxt:x\r\n!3\r\nERR\r\n"
                 b"*1\r\n%1\r\n+k\r\n*1\r\n~1\r\n|1\r\n+a\r\n+b\r\n=5\r\ntxt:x\r\n",
    "r3_mget_reply": b"*4\r\n$3\r\none\r\n_\r\n$3\r\ntwo\r\n_\r\n",
    "r3_deep": b"%1\r\n+k\r\n" * 20 + b"|1\r\n+a\r\n" * 20 + b"_\r\n" + b"#t\r\n" * 20,
    # what redis-server 7.0 sent after HELLO 3 (DEBUG PROTOCOL of each type, HGETALL, tracking, ...)
    "r3_redis7": (
        b'%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n'
        b'$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:3\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n'
        b'$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n+OK\r\n:2\r\n:2\r\n'
        b':1\r\n$11\r\nHello World\r\n:12345\r\n,3.141\r\n(1234567999999999999999999999999999999\r\n'
        b'_\r\n*3\r\n:0\r\n:1\r\n:2\r\n~3\r\n:0\r\n:1\r\n:2\r\n%3\r\n:0\r\n#f\r\n:1\r\n'
        b'#t\r\n:2\r\n#f\r\n|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n'
        b':90\r\n$39\r\nSome real reply following the attribute\r\n'
        b'>2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$40\r\nSome real reply following the push reply\r\n'
        b'=29\r\ntxt:This is a verbatim\nstring\r\n#t\r\n#f\r\n%2\r\n$1\r\n'
        b'a\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n~2\r\n$1\r\nx\r\n$1\r\ny\r\n,1.5\r\n*2\r\n'
        b'$1\r\nv\r\n_\r\n_\r\n+OK\r\n$1\r\nv\r\n+OK\r\n>2\r\n$10\r\ninvalidate\r\n'
        b"*1\r\n$1\r\nk\r\n-ERR unknown command 'XX_NOSUCH', with args beginning with: \r\n"
        b'-LOADING fake\r\n=292\r\ntxt:I\'m sorry, Dave, I can\'t do that. Latency monitoring is disabled in this Redis instance. You may use "CONFIG SET latency-monitor-threshold <milliseconds>." in order to enable it. If we weren\'t in a deep space mission I\'d suggest to take a look at https://redis.io/topics/latency-monitor.\n\r\n'
        b'*1\r\n*2\r\n$1\r\nm\r\n,1.5\r\n+OK\r\n+PONG\r\n'
    ),
    "r3_streamed": b"$?\r\n;4\r\nHell\r\n;0\r\n",
    "r3_bad_double": b",1.\r\n",
    "r3_bad_verbatim": b"=5\r\ntxt_x\r\n",
}

MC_REQ = {
    "get": b"get key\r\n",
    "get_many": b"get a b c d e f g\r\n",
    "gets": b"gets k1 k2 k3\r\n",
    "gat": b"gat 100 k1 k2 k3\r\ngats -1 a b\r\n",
    "set": b"set k 0 0 5\r\nhello\r\n",
    "set_noreply": b"set k 1 2 3 noreply\r\nabc\r\nadd k 0 0 1\r\nx\r\n",
    "cas": b"cas k 0 0 2 12345\r\nhi\r\nappend k 0 0 1\r\n!\r\nprepend k 0 0 1\r\n<\r\n",
    "incr": b"incr n 5\r\ndecr n 2 noreply\r\n",
    "delete": b"delete k\r\ndelete k 0\r\ndelete k noreply\r\ndelete k 1\r\n",
    "touch": b"touch k 10\r\nversion\r\nquit\r\n",
    "unsupported": b"flush_all\r\nstats\r\nverbosity 1\r\nms k 2\r\nhi\r\nmg k v\r\n",
    "unknown": b"bogus command\r\n\r\n",
    "bare_lf": b"get a b\nset k 0 0 1\nx\r\n",
    "spaces": b"get   a    b  \r\n",
    "long_key": b"get " + b"k" * 251 + b" b\r\n",
    "key_250": b"get " + b"k" * 250 + b"\r\n",
    "bad_len": b"set k 0 0 -1\r\n",
    "bad_chunk": b"set k 0 0 2\r\nabc\r\n",
    "long_line": b"set " + b"x " * 1100 + b"\r\n",
    "pipeline": b"set a 0 0 1\r\n1\r\nget a b\r\nincr a 1\r\ndelete a\r\nget a\r\n",
    "big_data": b"set big 0 0 1500\r\n" + b"d" * 1500 + b"\r\n",
    "token_counts": b"cas k 0 600 5 \r\nset k 0 0 1 foo\r\nx\r\nset k 0 0 abc x y\r\nget\r\n",
    "binary": bytes([0x80, 0x0a]) + bytes(10) + b"\xde\xad\xbe\xef" + bytes(8) + b"get a\r\n",
}

MC_RSP = {
    "end": b"END\r\n",
    "values": b"VALUE a 0 1\r\n1\r\nVALUE b 5 3 99\r\nabc\r\nEND\r\n",
    "statuses": b"STORED\r\nNOT_STORED\r\nEXISTS\r\nNOT_FOUND\r\nDELETED\r\nTOUCHED\r\nOK\r\n",
    "number": b"42\r\n18446744073709551615\r\n",
    "text": b"VERSION 1.6.21\r\nERROR\r\nCLIENT_ERROR bad data chunk\r\n"
            b"SERVER_ERROR out of memory storing object\r\n",
    "value_crlf": b"VALUE k 0 4\r\n\r\n\r\n\r\nEND\r\n",
    "bare_lf": b"VALUE k 0 1\nx\r\nEND\n",
    "big_value": b"VALUE k 0 2000\r\n" + b"v" * 2000 + b"\r\nEND\r\n",
    "bad_after_value": b"VALUE k 0 1\r\nx\r\nSTORED\r\n",
    "bad_value": b"VALUE k x 1\r\nx\r\nEND\r\n",
    "unknown": b"WHAT\r\n",
    "extra": b"STORED extra\r\n",
}

CONF_EXTRA = {
    "flow.yml": b"a: {listen: 127.0.0.1:1, servers: [127.0.0.1:2:1, 127.0.0.1:3:2 b]}\n",
    "unix.yml": b"u:\n  listen: /tmp/x.sock 0600\n  servers:\n   - /tmp/s.sock:1 one\n",
    "anchors.yml": b"a: &x\n  listen: 127.0.0.1:1\nb: *x\n",
    "two_docs.yml": b"a: 1\n---\nb: 2\n",
    "bad_key.yml": b"p:\n  listen: 127.0.0.1:1\n  hash: nosuch\n  servers:\n   - h:1:0\n",
}

# headers: (mbuf, want_elems, servers, reads)
VARIANTS = [
    ("", header(512, False, 3, (0, 0, 0))),
    ("_split", header(549, True, 2, (1, 7, 50))),
    ("_big", header(4096, True, 4, (200, 0, 3))),
]


def write_proto(target, seeds):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    for name, data in seeds.items():
        for suffix, h in VARIANTS:
            (d / f"{name}{suffix}").write_bytes(h + data)


def main():
    # (written over, not emptied first: the corpus also keeps inputs fuzzing found, such as
    # redis_req/xgroup-without-key, which are not generated here)
    write_proto("redis_req", REDIS_REQ)
    write_proto("redis_rsp", REDIS_RSP)
    write_proto("mc_req", MC_REQ)
    write_proto("mc_rsp", MC_RSP)
    conf = CORPUS / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for p in sorted((REPO / "tests/unit/data/conf/good").glob("*.yml")):
        shutil.copy(p, conf / p.name)
    shutil.copy(REPO / "conf/nutcrackers.yml", conf / "nutcrackers.yml")
    for name, data in CONF_EXTRA.items():
        (conf / name).write_bytes(data)


if __name__ == "__main__":
    main()
