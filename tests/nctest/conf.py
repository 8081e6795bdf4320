"""Proxy configuration files: YAML text for {pool: {key: value, "servers": [...]}} in the given
key order, and the listen ports it names.

Threads: pure functions, any thread.
"""
import os
from pathlib import Path


def yaml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and (v == "" or any(c in v for c in "{}[]#&*!|>'\"%@`")):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(v)


def render_conf(pools):
    """YAML text for {pool_name: {key: value, "servers": [..]}} (keys in the given order)."""
    lines = []
    for name, keys in pools.items():
        lines.append(f"{name}:")
        for key, value in keys.items():
            if isinstance(value, (list, tuple)):
                lines.append(f"  {key}:")
                lines.extend(f"   - {yaml_value(item)}" for item in value)
            else:
                lines.append(f"  {key}: {yaml_value(value)}")
    return "\n".join(lines) + "\n"


def write_conf(path, pools_or_text):
    """Writes the config (a dict for render_conf, or text) at once: a reader (a reload) never
    sees half a file. Returns the Path."""
    path = Path(path)
    text = pools_or_text if isinstance(pools_or_text, str) else render_conf(pools_or_text)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def listen_port(pool):
    """The TCP port of a pool dict's `listen` (None for a unix socket)."""
    listen = pool["listen"].split()[0]
    return None if listen.startswith("/") else int(listen.rsplit(":", 1)[1])


def listen_ports(conf_path):
    """TCP ports of the pools' `listen:` lines in a config file."""
    ports = []
    for line in Path(conf_path).read_text().splitlines():
        key, _, value = line.strip().partition(":")
        if key == "listen":
            host_port = value.strip().strip('"')
            if not host_port.startswith("/"):
                ports.append(int(host_port.rsplit(":", 1)[1].split()[0]))
    return ports
