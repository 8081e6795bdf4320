import time, uuid, socket, threading
import pytest
import ncproxy
from ncproxy import resp, bulk, array, integer, RawConn

def test_probe(redis_server, write_conf, nutcrackers, stopped):
    cl = ncproxy.start_cluster("redis", 1, 1, redis_server, write_conf, nutcrackers, "p", timeout=500)
    stopped(cl.procs[0])
    a = cl.raw(timeout=8); b = cl.raw(timeout=8)
    big = b"x" * (32 << 20)
    t = time.time()
    def send_big():
        try: a.send(resp("SET", "big", big))
        except Exception as e: print("send exc", e)
    th = threading.Thread(target=send_big); th.start()
    time.sleep(0.2)
    b.send(resp("GET", "small"))
    try: print("B got", b.reply(), time.time() - t)
    except Exception as e: print("B", e, time.time() - t)
    try: print("A got", a.reply(), time.time() - t)
    except Exception as e: print("A", e, time.time() - t)
    stopped.resume(); th.join(10)
