#!/usr/bin/env python3
"""WebSocket peers for `loadtest ws`, on 127.0.0.1 at a free port (printed as `listening PORT`).

  ws-peer.py echo [LIFETIME [CERT KEY]]   the `websockets` package's server, echoing every message
                    (python3 -m pip install websockets); over TLS (wss://) with a certificate and key
  ws-peer.py script [LIFETIME]   a hand-written server whose behaviour the request path picks, for the conformance tests:
                      /fragments  a text and a binary message in fragments, a ping between fragments
                      /headers    prints the X-Token, Sec-WebSocket-Protocol and Origin it was sent
                      /masked     a masked frame                 /utf8      a text message that is not UTF-8
                      /reserved   a frame with RSV1 set          /close     a close with status 4000
                      /normal     a close with status 1000       /bad-accept  a wrong Sec-WebSocket-Accept
                      /flood      64 MiB of fragments of one message that never ends
                      /flood-frame  one frame announcing 64 MiB, then its bytes
                      /timestamps   200 text messages, each starting with the send time in Unix microseconds
                      /midframe   a message, then half of a frame, then the end of the connection (FIN)
                      /slowread   reads nothing for 0.5 s (the client's first write fills the kernel's
                                  buffers), then echoes every message
                      /pingflood  pings, never reading the pongs: stops when its sends block for 0.5 s,
                                  then holds the connection
                    It prints one line per finding (what the client answered), which the tests read.
Both run until terminated (SIGTERM), or for LIFETIME seconds when given as the next argument (default 120).
"""
import base64
import hashlib
import os
import socket
import struct
import sys
import threading
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def frame(opcode, payload=b"", fin=True, rsv=0, mask=None, length=None):
    """A server frame (unmasked unless `mask` is given; `length` may announce more than `payload`)."""
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    m = 0x80 if mask else 0
    if n < 126:
        head += bytes([m | n])
    elif n <= 0xFFFF:
        head += bytes([m | 126]) + struct.pack("!H", n)
    else:
        head += bytes([m | 127]) + struct.pack("!Q", n)
    if mask:
        head += mask
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + payload


def read_exact(conn, n):
    data = bytearray()
    while len(data) < n:
        chunk = conn.recv(min(n - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def unmask(payload, key):
    """`payload` XORed with the 4-byte `key` repeated (as one big integer: fast for megabytes)."""
    n = len(payload)
    if n == 0:
        return b""
    keys = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(keys, "big")).to_bytes(n, "big")


def read_frame(conn):
    """The client's next frame: (opcode, unmasked payload, whether it was masked)."""
    b0, b1 = read_exact(conn, 2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", read_exact(conn, 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", read_exact(conn, 8))[0]
    key = read_exact(conn, 4) if b1 & 0x80 else b"\0\0\0\0"
    payload = unmask(read_exact(conn, n), key)
    return b0 & 0x0F, payload, bool(b1 & 0x80)


def client_close(conn, scenario):
    """Reads the client's frames until its close; prints its code (and whether every frame was masked)."""
    masked = True
    try:
        while True:
            opcode, payload, was_masked = read_frame(conn)
            masked = masked and was_masked
            if opcode == 0x8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                say(f"{scenario}: client close {code}{'' if masked else ' UNMASKED'}")
                return
            if opcode == 0xA:
                say(f"{scenario}: pong {payload.decode(errors='replace')}{'' if was_masked else ' UNMASKED'}")
    except (EOFError, OSError):
        say(f"{scenario}: client gone without a close frame")


def handshake(conn):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(4096)
        if not chunk:
            raise EOFError
        head += chunk
    lines = head.split(b"\r\n")
    path = lines[0].split(b" ")[1].decode()
    fields = {}
    for line in lines[1:]:
        if b":" in line:
            name, value = line.split(b":", 1)
            fields[name.strip().lower()] = value.strip()
    key = fields.get(b"sec-websocket-key", b"")
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    if path == "/bad-accept":
        accept = base64.b64encode(hashlib.sha1(key).digest())
    protocol = b""
    if path == "/headers":
        say(f"headers: x-token={fields.get(b'x-token', b'').decode()} "
            f"protocols={fields.get(b'sec-websocket-protocol', b'').decode()} origin={fields.get(b'origin', b'').decode()}")
    if b"sec-websocket-protocol" in fields:
        protocol = b"Sec-WebSocket-Protocol: " + fields[b"sec-websocket-protocol"].split(b",")[0].strip() + b"\r\n"
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Accept: " + accept + b"\r\n" + protocol + b"\r\n")
    return path


def serve_script(conn):
    try:
        scenario = handshake(conn).strip("/")
        if scenario == "fragments":
            # Every 10 ms until the client closes: a text message in three fragments with a ping between the
            # first two, and a binary one in two.
            reader = threading.Thread(target=client_close, args=(conn, scenario))
            reader.start()
            while reader.is_alive():
                conn.sendall(frame(0x1, b"Hel", fin=False) + frame(0x9, b"p1") + frame(0x0, b"lo, ", fin=False)
                             + frame(0x0, b"world") + frame(0x2, bytes(range(200)), fin=False)
                             + frame(0x0, bytes(range(56))))
                time.sleep(0.01)
        elif scenario == "headers":
            client_close(conn, scenario)
        elif scenario == "masked":
            conn.sendall(frame(0x1, b"ok") + frame(0x1, b"hi", mask=b"\x01\x02\x03\x04"))
            client_close(conn, scenario)
        elif scenario == "utf8":
            conn.sendall(frame(0x1, b"ok") + frame(0x1, b"\xc0\xaf"))
            client_close(conn, scenario)
        elif scenario == "reserved":
            conn.sendall(frame(0x1, b"ok") + frame(0x1, b"ok", rsv=0x40))
            client_close(conn, scenario)
        elif scenario in ("close", "normal"):
            code = 4000 if scenario == "close" else 1000
            conn.sendall(frame(0x1, b"ok") + frame(0x8, struct.pack("!H", code) + b"bye"))
            client_close(conn, scenario)
        elif scenario == "bad-accept":
            client_close(conn, scenario)
        elif scenario in ("flood", "flood-frame"):
            chunk = os.urandom(65536)
            sent = 0
            try:
                conn.sendall(frame(0x1, b"ok"))
                if scenario == "flood-frame":
                    conn.sendall(frame(0x2, b"", length=64 << 20))
                else:
                    conn.sendall(frame(0x2, chunk, fin=False))
                    sent += len(chunk)
                while sent < 64 << 20:
                    conn.sendall(chunk if scenario == "flood-frame" else frame(0x0, chunk, fin=False))
                    sent += len(chunk)
                say(f"{scenario}: sent all {sent} bytes")
            except OSError:
                say(f"{scenario}: stopped after {sent} bytes")
        elif scenario == "midframe":
            conn.sendall(frame(0x1, b"ok") + frame(0x2, bytes(100))[:42])
            conn.shutdown(socket.SHUT_WR)
            say("midframe: closed after 40 of 100 payload bytes")
            client_close(conn, scenario)
        elif scenario == "slowread":
            time.sleep(0.5)
            while True:
                opcode, payload, _ = read_frame(conn)
                if opcode == 0x8:
                    conn.sendall(frame(0x8, payload))
                    break
                conn.sendall(frame(opcode, payload))
        elif scenario == "pingflood":
            conn.settimeout(0.5)
            batch = frame(0x9, bytes(125)) * 64
            sent = 0
            try:
                while sent < 256 << 20:
                    conn.sendall(batch)
                    sent += len(batch)
                say(f"pingflood: sent all {sent} bytes")
            except socket.timeout:
                say(f"pingflood: blocked after {sent} bytes")
                time.sleep(10)  # held open (a close with unread pongs would reset the client's connection)
            except OSError:
                say(f"pingflood: cut after {sent} bytes")
        elif scenario == "timestamps":
            for i in range(200):
                conn.sendall(frame(0x1, f"{time.time_ns() // 1000} message {i}".encode()))
                time.sleep(0.002)
            say("timestamps: sent 200")
            client_close(conn, scenario)
        else:
            say(f"unknown scenario {scenario}")
    except (EOFError, OSError):
        pass
    finally:
        conn.close()


def run_script():
    listener = socket.create_server(("127.0.0.1", 0))
    say(f"listening {listener.getsockname()[1]}")
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve_script, args=(conn,), daemon=True).start()


def run_echo(tls_files):
    import asyncio
    import ssl
    from websockets.asyncio.server import serve

    context = None
    if tls_files:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls_files)

    async def echo(websocket):
        async for message in websocket:
            await websocket.send(message)

    async def main():
        async with serve(echo, "127.0.0.1", 0, max_size=1 << 20, ssl=context) as server:
            say(f"listening {server.sockets[0].getsockname()[1]}")
            await asyncio.sleep(lifetime)

    asyncio.run(main())


if __name__ == "__main__":
    lifetime = float(sys.argv[2]) if len(sys.argv) > 2 else 120
    if sys.argv[1] == "echo":
        run_echo(sys.argv[3:5])
    else:
        threading.Thread(target=run_script, daemon=True).start()
        time.sleep(lifetime)
    os._exit(0)
