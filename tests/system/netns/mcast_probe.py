#!/usr/bin/env python3
"""Plain multicast sender/receiver for the harness self-test (harness.sh):
checks that the namespaces, bridges and impairments do what the scenarios
assume, without mdcast.

  mcast_probe.py send GROUP:PORT IFACE_IP COUNT [TAG]
  mcast_probe.py recv GROUP:PORT IFACE_IP LIMIT_S

send: COUNT datagrams "TAG SEQ", paced so that no receiver's buffer
overflows, then END_COPIES end marks "TAG end" (a lossy link loses a few).
recv: prints "joined" once a member, then, at the first end mark, on SIGTERM
or after LIMIT_S in all, "received N distinct D" (N data datagrams, D
distinct ones) and exits. It waits for the sender, never for a time of
silence: a receiver started before a slow sender would count nothing.
"""
import signal
import socket
import sys
import time

END_COPIES = 40


def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def send(group, ifip, count, tag):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(ifip))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    for i in range(count):
        s.sendto(f"{tag} {i}".encode(), group)
        if i % 50 == 49:
            time.sleep(0.005)
    for _ in range(END_COPIES):
        s.sendto(f"{tag} end".encode(), group)
        time.sleep(0.002)
    print(f"sent {count}", flush=True)


def recv(group, ifip, limit):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Room for a whole burst even when this process is slow to be scheduled.
    s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 8 << 20)
    s.bind(group)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group[0]) + socket.inet_aton(ifip))
    print("joined", flush=True)
    s.settimeout(0.1)
    deadline = time.monotonic() + limit
    n, seen = 0, set()
    while not stop and time.monotonic() < deadline:
        try:
            data = s.recv(2048)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if data.endswith(b" end"):
            break
        n += 1
        seen.add(data)
    print(f"received {n} distinct {len(seen)}", flush=True)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    mode, group, ifip = sys.argv[1], addr(sys.argv[2]), sys.argv[3]
    if mode == "send":
        send(group, ifip, int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else "x")
    elif mode == "recv":
        recv(group, ifip, float(sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
