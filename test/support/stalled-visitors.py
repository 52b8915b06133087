# Visitors that ask and never read: N connections to 127.0.0.1:<port>, each with a 4 KiB receive
# buffer and one request (<method> <path>, Host <host>, empty body). Once every connection has an
# answer (or after <wait> seconds) it prints the statuses as JSON ({"200": n, "503": n, ...}; "none"
# for no answer yet), peeked at without reading them; it ends with its stdin.
import json, socket, sys, time

port, host, method, path, n, wait = sys.argv[1:7]
socks = []
for _ in range(int(n)):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(('127.0.0.1', int(port)))
    s.sendall(f'{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n'.encode())
    socks.append(s)

def status(s):
    try:
        head = s.recv(12, socket.MSG_PEEK | socket.MSG_DONTWAIT).decode('latin1')
        return head[9:12] if len(head) == 12 and head.startswith('HTTP/1.1 ') else 'none'
    except BlockingIOError:
        return 'none'

deadline = time.monotonic() + float(wait)
while True:
    counts = {}
    for s in socks:
        counts[status(s)] = counts.get(status(s), 0) + 1
    if 'none' not in counts or time.monotonic() > deadline:
        break
    time.sleep(0.2)
print(json.dumps(counts), flush=True)
sys.stdin.read()
