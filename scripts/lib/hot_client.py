"""A bounded client for instruction counts (scripts/profile_hot.sh): COUNT identical
requests of one workload, one after another on one kept-alive loopback connection,
byte for byte the requests of the load generator (crates/conduit-mcp-bench/src/wire.rs):
W1 `tools/call greet`, W2 `tasks/get` on one task it creates first, W4 creates
(`tools/call slow_compute`, the extension declared). Ids count up from 1.

Usage: hot_client.py ADDR W1|W2|W4 COUNT [--sizes]
With --sizes it prints the body lengths of one greet, one tasks/get and one create
(the echo answers with bodies of those lengths) instead.
"""

import json
import re
import socket
import sys

META_PLAIN = (
    '{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":'
    '{"name":"conduit-mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}'
)
META_TASKS = (
    '{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":'
    '{"name":"conduit-mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":'
    '{"extensions":{"io.modelcontextprotocol/tasks":{}}}}'
)


def greet(i):
    body = (
        f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"greet",'
        f'"arguments":{{"name":"bench-{i % 1000}"}},"_meta":{META_PLAIN}}}}}'
    )
    return "tools/call", "greet", body


def tasks_get(i, task_id):
    body = f'{{"jsonrpc":"2.0","id":{i},"method":"tasks/get","params":{{"taskId":"{task_id}","_meta":{META_TASKS}}}}}'
    return "tasks/get", task_id, body


def create(i):
    body = (
        f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"slow_compute",'
        f'"arguments":{{"seconds":3600,"label":"w{i}"}},"_meta":{META_TASKS}}}}}'
    )
    return "tools/call", "slow_compute", body


class Conn:
    """One kept-alive HTTP/1.1 connection."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.host = addr
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def call(self, method, name, body):
        data = body.encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: {method}\r\nMcp-Name: {name}\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self.sock.sendall(head.encode() + data)
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status = head.split(b" ", 2)[1]
        m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
        if not m:
            sys.exit(f"hot_client: no Content-Length in {head!r}")
        n = int(m.group(1))
        while len(self.buf) < n:
            self.fill()
        answer, self.buf = self.buf[:n], self.buf[n:]
        if status != b"200":
            sys.exit(f"hot_client: HTTP {status.decode()}: {answer[:300]!r}")
        return answer

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            sys.exit("hot_client: the server closed the connection")
        self.buf += chunk


def new_task(conn):
    """A new task's id; the echo creates none, and is asked about an id of the same length."""
    result = json.loads(conn.call(*create(1)))["result"]
    return result.get("taskId") or "t" * 43


def main():
    addr, workload, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    conn = Conn(addr)
    if "--sizes" in sys.argv:
        sizes = [len(conn.call(*greet(1)))]
        sizes.append(len(conn.call(*tasks_get(1, new_task(conn)))))
        sizes.append(len(conn.call(*create(1))))
        print(",".join(map(str, sizes)))
        return
    if workload == "W1":
        make = greet
    elif workload == "W2":
        task = new_task(conn)
        make = lambda i: tasks_get(i, task)  # noqa: E731
    elif workload == "W4":
        make = create
    else:
        sys.exit(f"hot_client: unknown workload {workload}")
    for i in range(1, count + 1):
        answer = conn.call(*make(i))
        if b'"error"' in answer[:40]:
            sys.exit(f"hot_client: {answer[:300]!r}")


if __name__ == "__main__":
    main()
