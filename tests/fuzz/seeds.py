#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets (tests/fuzz/corpus/<target>/) from the
hand-written inputs below; run it after editing them (`python3 tests/fuzz/seeds.py`).

A protocol seed is a 4-byte header (fuzz_feed.h: mbuf size, want_elems, servers, read sizes)
then the byte stream. The memcached binary-protocol seeds go to both memcached targets of their
side (mc_req and mc_bin_req, mc_rsp and mc_bin_rsp), where they mean the same. The config seeds are the unit tests' good configs plus a few written here.
A manage_line seed is a 4-byte header (fuzz_manage_line.c: password set, read sizes) then what a
manage client sends: every command the port knows, with and without arguments, good and bad,
and HTTP requests; a manage_http seed is an HTTP request head as is.
"""
import shutil
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# the helper library (tests/nctest): this is where the seed writer finds it
sys.path.insert(0, str(HERE.parent))

from nctest.codec import resp  # noqa: E402

CORPUS = HERE / "corpus"
MBUF = {512: 0, 549: 1, 1024: 2, 4096: 3}


def header(mbuf=512, want=False, servers=3, reads=(0, 0, 0), cluster=False, opts=0):
    """opts: h[0] bits 5-7 (fuzz_feed.h fz_opts); cluster sets bit 5 (redis client_cluster_mode)"""
    h0 = MBUF[mbuf] | (4 if want else 0) | ((servers - 1) << 3) | (0x20 if cluster else 0) | (opts << 5)
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
    # meta commands (memcache_meta.c)
    "meta": b"mg k v f t c q\r\nms k 2 T0 F5 q\r\nhi\r\nmd k q\r\nma k N0 J5 v\r\nme k\r\nmn\r\n",
    "meta_b64": b"mg Zm9v b v\r\nmg Zm9vYg== b k\r\nmg Zm!=v b\r\nmg A=== b\r\nme Zm9v b\r\n",
    "meta_ms_frame": b"ms\r\nms k\r\nhi\r\nms k +5\r\nhello\r\nms k 5\tx\r\nhello\r\n"
                     b"ms k 4294967301\r\nhello\r\nms k 3\r\nabcde\r\nms k -1\r\nx\r\n",
    "meta_tokens": b"ms k 5" + b" T1" * 17 + b"\r\nhello\r\nmg k" + b" v" * 21 + b" q\r\n",
    "meta_nul": b"mg k\x00x v q\r\nms k\x00 5\r\nhello\r\nms \x00k 5\r\n",
    "meta_long": b"mg k q" + b"x" * 300 + b"\r\nms " + b"k" * 260 + b" 2\r\nhi\r\n",
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


def bin_req(op, key=b"", extras=b"", value=b"", opaque=0, magic=0x80, keylen=None, body=None):
    """A memcached binary request: a 24-byte header (keylen, body: the real ones unless given)."""
    keylen = len(key) if keylen is None else keylen
    body = len(extras) + len(key) + len(value) if body is None else body
    return struct.pack(">BBHBBHIIQ", magic, op, keylen, len(extras), 0, 0, body, opaque, 0) + extras + key + value


def bin_rsp(op, status=0, key=b"", extras=b"", value=b"", opaque=0, magic=0x81):
    """A memcached binary reply packet."""
    body = len(extras) + len(key) + len(value)
    return struct.pack(">BBHBBHIIQ", magic, op, len(key), len(extras), 0, status, body, opaque, 7) + extras + key + value


FLAGS_EXP = struct.pack(">II", 5, 300)
ARITH = struct.pack(">QQI", 1, 10, 0)
MC_BIN_REQ = {
    "bin_get": bin_req(0x00, b"key", opaque=0xdeadbeef) + bin_req(0x0c, b"k2", opaque=2),
    "bin_quiet": bin_req(0x09, b"a", opaque=1) + bin_req(0x0d, b"b", opaque=2) + bin_req(0x0a, opaque=3),
    "bin_store": bin_req(0x01, b"k", FLAGS_EXP, b"hello") + bin_req(0x11, b"k", FLAGS_EXP, b"q") +
                 bin_req(0x02, b"k", FLAGS_EXP) + bin_req(0x03, b"k", FLAGS_EXP, b"r") +
                 bin_req(0x12, b"k", FLAGS_EXP, b"") + bin_req(0x13, b"k", FLAGS_EXP, b"x"),
    "bin_concat": bin_req(0x0e, b"k", value=b"tail") + bin_req(0x0f, b"k", value=b"head") +
                  bin_req(0x19, b"k", value=b"t") + bin_req(0x1a, b"k"),
    "bin_delete_arith": bin_req(0x04, b"k") + bin_req(0x14, b"k") + bin_req(0x05, b"n", ARITH) +
                        bin_req(0x06, b"n", ARITH) + bin_req(0x15, b"n", ARITH) + bin_req(0x16, b"n", ARITH),
    "bin_touch": bin_req(0x1c, b"k", b"\0\0\0\x0a") + bin_req(0x1d, b"k", b"\0\0\0\x0a") +
                 bin_req(0x1e, b"k", b"\0\0\0\x0a") + bin_req(0x23, b"k", b"\0\0\0\x0a") +
                 bin_req(0x24, b"k", b"\0\0\0\x0a"),
    "bin_keyless": bin_req(0x0b) + bin_req(0x10) + bin_req(0x10, b"items") + bin_req(0x08) +
                   bin_req(0x08, extras=b"\0\0\0\x05") + bin_req(0x18) + bin_req(0x0a, opaque=9),
    "bin_quit": bin_req(0x07, opaque=4) + bin_req(0x00, b"after"),
    "bin_quitq": bin_req(0x17) + bin_req(0x00, b"after"),
    "bin_unknown": bin_req(0x21, b"PLAIN", value=b"\0u\0p") + bin_req(0x1b, extras=b"\0\0\0\1") +
                   bin_req(0x00, b"next"),
    "bin_bad_shape": bin_req(0x00, b"k", b"\0\0\0\0") + bin_req(0x00, b"x"),
    "bin_no_extras": bin_req(0x01, b"k", value=b"v"),
    "bin_short_body": bin_req(0x00, b"key", body=2),
    "bin_key_250": bin_req(0x00, b"k" * 250) + bin_req(0x01, b"k" * 250, FLAGS_EXP, b"v"),
    "bin_key_251": bin_req(0x00, b"k" * 251),
    "bin_too_large": bin_req(0x01, b"k", FLAGS_EXP, keylen=1, body=(1 << 30)),
    "bin_big_value": bin_req(0x01, b"big", FLAGS_EXP, b"d" * 1500) + bin_req(0x00, b"big"),
    "bin_bad_magic": bin_req(0x00, b"a") + bin_req(0x00, b"b", magic=0x81),
    "bin_text_after": bin_req(0x00, b"a") + b"get a\r\n",
}

# binary replies (h[0] bits 5-7: 4 a binary request's, 6 a quiet one's, ended by the NOOP's)
MC_BIN_RSP = {
    "bin_hit": bin_rsp(0x00, extras=b"\0\0\0\5", value=b"hello", opaque=1) +
               bin_rsp(0x0c, key=b"k", extras=b"\0\0\0\0", value=b"v"),
    "bin_statuses": b"".join(bin_rsp(0x00, st, value=b"err") for st in
                             (1, 2, 3, 4, 5, 6, 7, 8, 0x20, 0x21, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86)),
    "bin_stored": bin_rsp(0x01) + bin_rsp(0x04) + bin_rsp(0x05, value=struct.pack(">Q", 11)) +
                  bin_rsp(0x0b, value=b"1.6.18") + bin_rsp(0x08),
    "bin_stat": bin_rsp(0x10, key=b"pid", value=b"1") + bin_rsp(0x10, key=b"curr_items", value=b"7") +
                bin_rsp(0x10, key=b"version", value=b"1.6.18") + bin_rsp(0x10) + bin_rsp(0x10, 0x81),
    "bin_big": bin_rsp(0x00, extras=b"\0\0\0\0", value=b"v" * 2000),
    "bin_bad_magic": bin_rsp(0x00) + bin_rsp(0x00, magic=0x80),
}
MC_BIN_RSP_QUIET = {
    "bin_quiet": bin_rsp(0x0a) + bin_rsp(0x09, extras=b"\0\0\0\0", value=b"v") + bin_rsp(0x0a) +
                 bin_rsp(0x11, 0x02, value=b"Data exists for key.") + bin_rsp(0x0a),
    "bin_quiet_bad": bin_rsp(0x09, 1) + bin_rsp(0x0a, value=b"x") + bin_rsp(0x0a),
}
BIN_VARIANTS = [("", header(512, False, 3, (0, 0, 0), opts=4)), ("_split", header(549, True, 2, (1, 7, 50), opts=4)),
                ("_big", header(4096, False, 4, (200, 0, 3), opts=5))]
BIN_QUIET_VARIANTS = [("", header(512, False, 3, (0, 0, 0), opts=6)), ("_split", header(549, False, 2, (1, 7, 50), opts=7))]

# meta commands' replies (h[0] bits 5-6: 1 a meta command's, 2 a quiet one's, ended by MN)
MC_RSP_META = {
    "meta": b"VA 5 f0 t-1\r\nhello\r\nHD c5\r\nEN\r\nNF\r\nNS\r\nEX\r\nOK\r\n"
            b"ME k exp=-1 la=0 cas=1 fetch=no cls=1 size=61\r\nCLIENT_ERROR bad command line format\r\n",
    "meta_bad": b"VA x\r\nMN\r\n",
}
MC_RSP_QUIET = {
    "quiet": b"MN\r\nHD\r\nMN\r\nVA 4\r\nMN\r\n\r\nMN\r\nCLIENT_ERROR duplicate flag\r\nMN\r\n",
    "quiet_bad": b"HD\r\nHD\r\n",
}
META_VARIANTS = [("", header(512, False, 3, (0, 0, 0), opts=1)), ("_split", header(549, False, 2, (1, 7, 50), opts=1))]
QUIET_VARIANTS = [("", header(512, False, 3, (0, 0, 0), opts=2)), ("_split", header(549, False, 2, (1, 7, 50), opts=2))]

CONF_EXTRA = {
    "flow.yml": b"a: {listen: 127.0.0.1:1, servers: [127.0.0.1:2:1, 127.0.0.1:3:2 b]}\n",
    "unix.yml": b"u:\n  listen: /tmp/x.sock 0600\n  servers:\n   - /tmp/s.sock:1 one\n",
    "anchors.yml": b"a: &x\n  listen: 127.0.0.1:1\nb: *x\n",
    "two_docs.yml": b"a: 1\n---\nb: 2\n",
    "bad_key.yml": b"p:\n  listen: 127.0.0.1:1\n  hash: nosuch\n  servers:\n   - h:1:0\n",
}

# the manage port (src/manage/manage_cmd.c's table, manage_http.c's paths); the fuzz fixture's
# pools are "alpha" and 'b\u00e9ta"q\\' (tests/fuzz/fuzz_manage.c), its password FZM_PASSWORD
MANAGE_PASSWORD = b"fz-Pa55-w0rd"
BETA = 'béta"q\\'.encode()


def lines(*ls, end=b"\r\n"):
    return b"".join(x + end for x in ls)


MANAGE_LINE = {
    "status": lines(b"status", b"STATUS", b"status workers", b"status latency", b"Status Latency"),
    "status_bad": lines(b"status foo", b"status workers x", b"status latency 1", b"status  \t workers"),
    "find_key": lines(b"find_key alpha foo", b"find_key alpha {foo}bar", b"find_key " + BETA + b" k",
                      b"find_keys alpha a b c d e {x}1 {x}2", b"FIND_KEY\talpha\t\tk"),
    "find_key_bad": lines(b"find_key", b"find_key alpha", b"find_key nosuch k", b"find_key alpha a b",
                          b"find_keys", b"find_keys alpha", b"find_keys nosuch a b"),
    "find_keys_many": lines(b"find_keys alpha " + b" ".join(b"k%d" % i for i in range(1030))),
    "slowlog": lines(b"slowlog len", b"slowlog get", b"slowlog get 3", b"slowlog get 1000",
                     b"slowlog reset", b"slowlog len"),
    "slowlog_bad": lines(b"slowlog", b"slowlog foo", b"slowlog get 0", b"slowlog get -1", b"slowlog get x",
                         b"slowlog get 99999999999999999999999", b"slowlog get 1 2", b"slowlog len x",
                         b"slowlog reset now", b"slowlog get +5", b"slowlog get 0x10"),
    "reload": lines(b"reload", b"RELOAD", b"reload now"),
    "auth": lines(b"auth " + MANAGE_PASSWORD, b"slowlog get 2", b"reload", b"reload", b"slowlog reset",
                  b"slowlog len", b"auth wrong", b"reload"),
    "auth_bad": lines(b"auth", b"auth wrong", b"auth a b", b"auth " + MANAGE_PASSWORD + b"x",
                      b"AUTH\t" + MANAGE_PASSWORD, b"slowlog get"),
    "help_quit": lines(b"help", b"HELP", b"help me", b"quit now", b"quit", b"status"),
    "unknown": lines(b"bogus", b"", b"   ", b"\t", b"stats", b"get key", b"\x00\xff\xfe", b"\xc3\xa9t\xc3\xa9"),
    "line_ends": b"status\nhelp\r\nslowlog len\n\r\nstatus\r\r\nquit",
    "unterminated": b"slowlog len\r\nfind_key alpha last",
    "errors": lines(*[b"nope %d" % i for i in range(17)]),
    # the longest line that fits (4096 bytes with its CRLF), and one byte more
    "long_line_fits": b"find_key alpha " + b"k" * (4096 - 15 - 2) + b"\r\nslowlog len\r\n",
    "long_line_lf": b"find_key alpha " + b"k" * (4096 - 15 - 1) + b"\nslowlog len\r\n",
    "long_line_over": b"find_key alpha " + b"k" * (4096 - 15 - 1) + b"\r\nslowlog len\r\n",
    "long_line": b"status " + b"x" * 4100 + b"\r\n",
    "http_get": lines(b"GET / HTTP/1.1", b"Host: localhost:22222", b"User-Agent: curl/8.0", b"Accept: */*", b""),
    "http_paths": lines(b"HEAD /healthz HTTP/1.0", b""),
    "http_metrics": lines(b"GET /metrics?x=1 HTTP/1.1", b"Accept: text/plain", b""),
    "http_latency": lines(b"GET /latency HTTP/1.0", b""),
    "http_bad": lines(b"POST /metrics HTTP/1.1", b"Content-Length: 0", b""),
    "http_nosuch": lines(b"GET /nosuch HTTP/1.1", b""),
    "http_eof": b"GET /healthz HTTP/1.1\r\nHost: x\r\n",
    "http_headers": lines(b"GET / HTTP/1.1", *[b"X-H%d: v" % i for i in range(101)], b""),
    "http_after_cmd": lines(b"status", b"GET /metrics HTTP/1.1", b"", b"status"),
    "silent": b"",
}

MANAGE_HTTP = {
    "get": lines(b"GET / HTTP/1.1", b"Host: localhost:22222", b"User-Agent: curl/8.0", b"Accept: */*", b""),
    "metrics": lines(b"GET /metrics HTTP/1.1", b"Host: x", b""),
    "metrics_query": lines(b"GET /metrics?name[]=a&b=%20 HTTP/1.0", b""),
    "latency": lines(b"GET /latency HTTP/1.1", b""),
    "healthz": lines(b"GET /healthz HTTP/1.1", b""),
    "head": lines(b"HEAD /metrics HTTP/1.0", b""),
    "head_healthz": lines(b"HEAD /healthz HTTP/1.1", b""),
    "head_nosuch": lines(b"HEAD /nosuch HTTP/1.1", b""),
    "nosuch": lines(b"GET /nosuch HTTP/1.1", b""),
    "post": lines(b"POST / HTTP/1.1", b"Content-Length: 0", b""),
    "methods": lines(b"OPTIONS * HTTP/1.1", b""),
    "delete": lines(b"DELETE /metrics HTTP/1.0", b""),
    "long_method": lines(b"ABCDEFGHIJKLMNO / HTTP/1.1", b""),
    "longer_method": lines(b"ABCDEFGHIJKLMNOP / HTTP/1.1", b""),
    "long_path": lines(b"GET /" + b"p" * 300 + b" HTTP/1.1", b""),
    "path_255": lines(b"GET /" + b"p" * 254 + b"?q HTTP/1.1", b""),
    "bad_target": lines(b"GET /metrics\x00x HTTP/1.1", b""),
    "utf8_target": lines(b"GET /\xc3\xa9 HTTP/1.1", b""),
    "not_http2": lines(b"GET / HTTP/2", b""),
    "lowercase": lines(b"get / HTTP/1.1", b""),
    "no_version": lines(b"GET /", b""),
    "two_spaces": lines(b"GET  / HTTP/1.1", b""),
    "bare_lf": b"GET /latency HTTP/1.1\nHost: x\n\n",
    "eof": b"GET / HTTP/1.1\r\nHost: x",
    "request_line_only": b"HEAD / HTTP/1.0",
    "headers_100": lines(b"GET / HTTP/1.1", *[b"X-H%d: v" % i for i in range(100)], b""),
    "headers_101": lines(b"GET / HTTP/1.1", *[b"X-H%d: v" % i for i in range(101)], b""),
    "header_too_long": lines(b"GET / HTTP/1.1", b"X-Long: " + b"v" * 4100, b""),
}

MANAGE_VARIANTS = [
    ("", bytes([0, 0, 0, 0])),
    ("_split_pw", bytes([1, 1, 7, 50])),
    ("_reads", bytes([0, 200, 0, 3])),
]
# the long lines also in reads of 5 bytes: 819 of them leave 4095 bytes in the buffer, one short
# of its size, where a line must still be waited for
MANAGE_LONG_VARIANTS = MANAGE_VARIANTS + [("_reads5", bytes([0, 5, 5, 5]))]

# headers: (mbuf, want_elems, servers, reads)
VARIANTS = [
    ("", header(512, False, 3, (0, 0, 0))),
    ("_split", header(549, True, 2, (1, 7, 50))),
    ("_big", header(4096, True, 4, (200, 0, 3))),
]


# a pool with client_cluster_mode (h[0] bit 5): the commands of cluster-mode clients are served
REDIS_REQ_CLUSTER = {
    "cluster": resp("CLUSTER", "SLOTS") + resp("cluster", "shards") + resp("CLUSTER", "NODES") +
               resp("CLUSTER", "INFO") + resp("CLUSTER", "MYID") + resp("CLUSTER", "KEYSLOT", "{a}b") +
               resp("READONLY") + resp("READWRITE") + resp("CLUSTER", "HELP"),
    "cluster_errors": resp("CLUSTER") + resp("CLUSTER", "SLOTS", "x") + resp("CLUSTER", "KEYSLOT") +
                      resp("CLUSTER", "ADDSLOTS", "1") + resp("READONLY", "x") + b"cluster slots\r\n",
}
CLUSTER_VARIANTS = [
    ("", header(512, False, 3, (0, 0, 0), cluster=True)),
    ("_split", header(549, True, 2, (1, 7, 50), cluster=True)),
    ("_plain", header(512, False, 3, (0, 0, 0))),  # without it: refused as unknown
]


def write_proto(target, seeds, variants=VARIANTS):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    for name, data in seeds.items():
        for suffix, h in variants:
            (d / f"{name}{suffix}").write_bytes(h + data)


def write_manage():
    d = CORPUS / "manage_line"
    d.mkdir(parents=True, exist_ok=True)
    for name, data in MANAGE_LINE.items():
        for suffix, h in MANAGE_LONG_VARIANTS if name.startswith("long_line") else MANAGE_VARIANTS:
            (d / f"{name}{suffix}").write_bytes(h + data)
    d = CORPUS / "manage_http"
    d.mkdir(parents=True, exist_ok=True)
    for name, data in MANAGE_HTTP.items():
        (d / name).write_bytes(data)


def main():
    # (written over, not emptied first: the corpus also keeps inputs fuzzing found, such as
    # redis_req/xgroup-without-key, which are not generated here)
    write_proto("redis_req", REDIS_REQ)
    write_proto("redis_req", REDIS_REQ_CLUSTER, CLUSTER_VARIANTS)
    write_proto("redis_rsp", REDIS_RSP)
    write_proto("mc_req", MC_REQ)
    write_proto("mc_rsp", MC_RSP)
    write_proto("mc_rsp", MC_RSP_META, META_VARIANTS)
    write_proto("mc_rsp", MC_RSP_QUIET, QUIET_VARIANTS)
    for req, rsp in (("mc_req", "mc_rsp"), ("mc_bin_req", "mc_bin_rsp")):
        write_proto(req, MC_BIN_REQ)
        write_proto(rsp, MC_BIN_RSP, BIN_VARIANTS)
        write_proto(rsp, MC_BIN_RSP_QUIET, BIN_QUIET_VARIANTS)
    conf = CORPUS / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for p in sorted((REPO / "tests/unit/data/conf/good").glob("*.yml")):
        shutil.copy(p, conf / p.name)
    shutil.copy(REPO / "conf/nutcrackers.yml", conf / "nutcrackers.yml")
    for name, data in CONF_EXTRA.items():
        (conf / name).write_bytes(data)
    write_manage()


if __name__ == "__main__":
    main()
