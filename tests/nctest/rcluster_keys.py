"""Redis Cluster's hash slots of keys, for the tests of the proxy's Redis Cluster support (issue
28) and their fixture (nctest.rcluster re-exports these): keyslot() computes a key's slot as the
cluster does (CRC16-XMODEM of the key, or of its non-empty {hash tag}, modulo 16384), and the
key makers find keys of one slot (keys_in_slot: a hash tag per slot) or among a set of slots
(keys_in_slots), each search bounded.

Threads: pure functions (tag_for_slot's cache is only ever filled), any thread.
"""
import functools

SLOTS = 16384


def _crc16_table():
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
        table.append(crc & 0xFFFF)
    return table


_CRC16 = _crc16_table()


def crc16(data):
    """CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the checksum of Redis Cluster slots."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16[((crc >> 8) ^ byte) & 0xFF]
    return crc


def hashed_part(key):
    """What of a key (bytes) the slot is computed over: what stands between its first "{" and the
    first "}" after it when that is not empty (a hash tag), else the whole key."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            return key[start + 1:end]
    return key


def keyslot(key):
    """The slot of a key (str, as UTF-8, or bytes), as CLUSTER KEYSLOT gives it."""
    if isinstance(key, str):
        key = key.encode()
    return crc16(hashed_part(key)) % SLOTS


@functools.lru_cache(maxsize=None)
def tag_for_slot(slot):
    """A short hash tag ("t<n>", the smallest n) whose keys all fall in `slot`."""
    for n in range(SLOTS * 64):  # bounded: a slot is hit once in 16384 on average
        tag = f"t{n}"
        if keyslot(tag) == slot:
            return tag
    raise AssertionError(f"no tag found for slot {slot}")


def keys_in_slot(slot, n, prefix="rc"):
    """n distinct keys of one slot: "<prefix>:{<tag>}:<i>"."""
    tag = tag_for_slot(slot)
    return [f"{prefix}:{{{tag}}}:{i}" for i in range(n)]


def keys_in_slots(slots, n, prefix="rc"):
    """n distinct keys ("<prefix>:<i>", no hash tag) whose slots are among `slots` (a set)."""
    assert slots, "no slot to find keys in"
    found = []
    limit = n * (SLOTS // len(slots) + 1) * 50 + 1000  # bounded: ~n * 16384/len(slots) tries
    for i in range(limit):
        key = f"{prefix}:{i}"
        if keyslot(key) in slots:
            found.append(key)
            if len(found) == n:
                return found
    raise AssertionError(f"only {len(found)} of {n} keys in {len(slots)} slots in {limit} tries")
