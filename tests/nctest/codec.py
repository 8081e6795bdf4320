"""The wire formats, byte for byte: RESP requests and replies, RESP2 and RESP3 (encode, find the
end of one reply, decode it) and the memcached ASCII protocol (storage requests, VALUE blocks, the
end of one reply, the values of a retrieval reply).

Decoded RESP: "+" -> str, "-" -> Err (the text after "-"), ":" -> int, "$" -> bytes or None,
"*" -> list or None; RESP3: "%" -> dict, "~" -> Set (a list), ">" -> Push (a list), "_" -> None,
"#" -> bool, "," -> float, "(" -> int, "=" -> Verbatim (bytes, its format in .fmt), "!" -> Err;
an attribute ("|") is skipped (the value after it is decoded). A memcached error line decodes to
Err holding the whole line (without CRLF). Bytes that are no reply of the protocol raise Garbled.

Threads: pure functions, any thread.
"""


class Err(str):
    """An error reply: "ERR x" for "-ERR x\\r\\n", "SERVER_ERROR x" for that memcached line."""


class Garbled(ValueError):
    """Bytes that are not a reply of the protocol."""


class Set(list):
    """A RESP3 set ("~"), in the order the server sent it."""


class Push(list):
    """A RESP3 push (">"): out-of-band data, not a reply."""


class Verbatim(bytes):
    """A RESP3 verbatim string ("="): its text; .fmt is its format ("txt", "mkd")."""
    fmt = ""


RESP2_TYPES = (b"+", b"-", b":", b"$", b"*")
RESP3_LINES = (b"_", b"#", b",", b"(")      # one line each
RESP3_BLOBS = (b"=", b"!")                  # "$"-like: a length, then the data
RESP3_AGGREGATES = {b"%": 2, b"~": 1, b">": 1, b"|": 2}  # elements per counted item


# --- RESP -------------------------------------------------------------------------------------

def _b(a):
    if isinstance(a, bytes):
        return a
    if isinstance(a, (bytearray, memoryview)):
        return bytes(a)
    return str(a).encode()


def resp(*args):
    """A RESP request (array of bulk strings) for args (str, bytes or int)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = _b(a)
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def bulk(value):
    """A RESP bulk reply (None: the nil bulk)."""
    if value is None:
        return b"$-1\r\n"
    value = _b(value)
    return b"$%d\r\n%s\r\n" % (len(value), value)


def array(*items):
    """A RESP array reply of already-encoded items."""
    return b"*%d\r\n" % len(items) + b"".join(items)


def integer(n):
    return b":%d\r\n" % n


def _length(buf, pos, nl):
    try:
        return int(buf[pos + 1:nl])
    except ValueError:
        raise Garbled(f"bad length in {bytes(buf[pos:nl + 2])!r}") from None


def resp_end(buf, pos=0):
    """The end offset of the one RESP reply (RESP2 or RESP3) that starts at buf[pos], or None if
    incomplete. An attribute is part of the reply after it."""
    nl = buf.find(b"\r\n", pos)
    kind = bytes(buf[pos:pos + 1])
    if nl < 0:
        if kind and kind not in RESP2_TYPES + RESP3_LINES + RESP3_BLOBS + tuple(RESP3_AGGREGATES):
            raise Garbled(f"not a RESP reply at offset {pos}: {bytes(buf[pos:pos + 40])!r}")
        return None
    if kind in (b"+", b"-", b":") + RESP3_LINES:
        return nl + 2
    if kind in (b"$",) + RESP3_BLOBS:
        n = _length(buf, pos, nl)
        if n < 0:
            return nl + 2
        end = nl + 2 + n + 2
        if len(buf) < end:
            return None
        if buf[end - 2:end] != b"\r\n":
            raise Garbled(f"bulk of {n} bytes not followed by CRLF")
        return end
    if kind == b"*" or kind in RESP3_AGGREGATES:
        n = _length(buf, pos, nl) * RESP3_AGGREGATES.get(kind, 1)
        pos = nl + 2
        for _ in range(max(n, 0)):
            pos = resp_end(buf, pos)
            if pos is None:
                return None
        return resp_end(buf, pos) if kind == b"|" else pos
    raise Garbled(f"not a RESP reply at offset {pos}: {bytes(buf[pos:pos + 40])!r}")


def _decode_line(kind, line):
    if kind == b"+":
        return line.decode(errors="replace")
    if kind == b"-":
        return Err(line.decode(errors="replace"))
    if kind in (b":", b"("):
        return int(line)
    if kind == b"_":
        return None
    if kind == b"#":
        if line not in (b"t", b"f"):
            raise Garbled(f"bad boolean {line!r}")
        return line == b"t"
    return float(line)


def resp_decode(buf, pos=0):
    """(value, end) of the complete RESP reply at buf[pos] (see the module's doc for the types)."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        raise Garbled(f"incomplete reply {bytes(buf[pos:pos + 40])!r}")
    kind, line = bytes(buf[pos:pos + 1]), bytes(buf[pos + 1:nl])
    if kind in (b"+", b"-", b":") + RESP3_LINES:
        try:
            return _decode_line(kind, line), nl + 2
        except ValueError:
            raise Garbled(f"bad {kind!r} line {line!r}") from None
    if kind not in (b"$", b"*") + RESP3_BLOBS + tuple(RESP3_AGGREGATES):
        raise Garbled(f"not a RESP reply: {bytes(buf[pos:nl + 2])!r}")
    n = _length(buf, pos, nl)
    if kind in (b"$",) + RESP3_BLOBS:
        if n < 0:
            return None, nl + 2
        end = nl + 2 + n
        if buf[end:end + 2] != b"\r\n":
            raise Garbled(f"bulk of {n} bytes not followed by CRLF")
        data = bytes(buf[nl + 2:end])
        if kind == b"!":
            return Err(data.decode(errors="replace")), end + 2
        if kind == b"=":
            value = Verbatim(data[4:])
            value.fmt = data[:3].decode(errors="replace")
            return value, end + 2
        return data, end + 2
    if n < 0:
        return None, nl + 2
    items, pos = [], nl + 2
    for _ in range(n * RESP3_AGGREGATES.get(kind, 1)):
        item, pos = resp_decode(buf, pos)
        items.append(item)
    if kind == b"|":
        return resp_decode(buf, pos)
    if kind == b"%":
        return {items[i]: items[i + 1] for i in range(0, len(items), 2)}, pos
    if kind == b"~":
        return Set(items), pos
    if kind == b">":
        return Push(items), pos
    return items, pos


def decode(data):
    """The value of one whole RESP reply."""
    return resp_decode(data)[0]


# --- memcached --------------------------------------------------------------------------------

MC_ERRORS = (b"SERVER_ERROR", b"CLIENT_ERROR", b"ERROR")


def mc_store(verb, key, value, flags=0, exptime=0, extra=""):
    """A memcached storage request (set, add, ..., cas with its unique in extra)."""
    value = _b(value)
    return f"{verb} {key} {flags} {exptime} {len(value)}{extra}\r\n".encode() + value + b"\r\n"


def mc_get(*keys, verb="get"):
    return (verb + " " + " ".join(k if isinstance(k, str) else k.decode() for k in keys)
            ).encode() + b"\r\n"


def mc_value(key, value, flags=0, cas=None):
    """A memcached VALUE block (without the END)."""
    value = _b(value)
    key = key if isinstance(key, str) else key.decode()
    head = f"VALUE {key} {flags} {len(value)}" + (f" {cas}" if cas is not None else "")
    return head.encode() + b"\r\n" + value + b"\r\n"


def mc_line_end(buf, pos=0):
    """The end of the one-line reply at buf[pos] (STORED, DELETED, a number, an error ...), or
    None if incomplete."""
    nl = buf.find(b"\r\n", pos)
    return None if nl < 0 else nl + 2


def mc_retrieval_end(buf, pos=0):
    """The end of the retrieval reply (VALUE blocks, then END; or an error line) at buf[pos], or
    None if incomplete."""
    while True:
        nl = buf.find(b"\r\n", pos)
        if nl < 0:
            return None
        line = bytes(buf[pos:nl])
        if not line.startswith(b"VALUE "):
            return nl + 2
        parts = line.split()
        if len(parts) < 4 or not parts[3].isdigit():
            raise Garbled(f"bad VALUE line {line!r}")
        end = nl + 2 + int(parts[3]) + 2
        if len(buf) < end:
            return None
        if buf[end - 2:end] != b"\r\n":
            raise Garbled("value not followed by CRLF")
        pos = end


def mc_error(line):
    """Err for a memcached error line (with or without CRLF), else None."""
    line = bytes(line).rstrip(b"\r\n")
    return Err(line.decode(errors="replace")) if line.startswith(MC_ERRORS) else None


def mc_values(data):
    """The values of one whole retrieval reply: {key: (flags, value, cas or None)}, or Err for an
    error line. An error after some values (a partial reply) is Garbled: a failed multi-get is
    answered with one error."""
    found, pos = {}, 0
    while True:
        nl = data.find(b"\r\n", pos)
        if nl < 0:
            raise Garbled(f"incomplete retrieval reply {bytes(data[pos:pos + 40])!r}")
        line = bytes(data[pos:nl])
        if line == b"END":
            return found
        if line.startswith(b"VALUE "):
            parts = line.split()
            size = int(parts[3])
            found[parts[1].decode()] = (int(parts[2]), bytes(data[nl + 2:nl + 2 + size]),
                                        int(parts[4]) if len(parts) > 4 else None)
            pos = nl + 2 + size + 2
            continue
        err = mc_error(line)
        if err is None:
            raise Garbled(f"unexpected memcached reply line {line!r}")
        if found:
            raise Garbled(f"{len(found)} values, then {line!r}")
        return err
