#!/usr/bin/env python3
"""tls-idle-client.py: opens N TLS connections to 127.0.0.1:PORT, completes each handshake, then holds them
idle (nothing sent) for tls-compare.sh's heap-per-idle-connection case.

    tls-idle-client.py --port P --connections 2000 [--parallel 32] [--hold 120] [--plain] [--request]

Prints "ready N" (N handshakes completed) on standard output once every connection has finished its handshake
or failed, then holds them until standard input closes, SIGTERM, or --hold seconds pass, and exits. Each
handshake is a full one (a new SSLContext session cache is never reused); certificates are not verified
(the server is the local one under test). --plain opens plain TCP connections instead, for the same
figure without TLS. --request sends one keep-alive HTTP request on each connection and reads its response
before holding it (an idle keep-alive connection rather than a fresh one). Exits 1 if any connection failed.
"""
import argparse
import asyncio
import signal
import ssl
import sys


async def open_one(port, context, gate, held, failures, request):
    async with gate:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, ssl=context,
                                        server_hostname="localhost" if context else None), 30)
            if request:
                writer.write(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await asyncio.wait_for(reader.readexactly(length), 30)
            held.append((reader, writer))
        except Exception as error:  # noqa: BLE001 - every failure is counted and the first one printed
            if not failures:
                print(f"tls-idle-client: {type(error).__name__}: {error}", file=sys.stderr)
            failures.append(error)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--parallel", type=int, default=32)
    parser.add_argument("--hold", type=float, default=120)
    parser.add_argument("--plain", action="store_true")
    parser.add_argument("--request", action="store_true")
    args = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    if args.plain:
        context = None
    gate = asyncio.Semaphore(args.parallel)
    held, failures = [], []
    await asyncio.gather(*(open_one(args.port, context, gate, held, failures, args.request) for _ in range(args.connections)))
    # Let the server's post-handshake messages (TLS 1.3 session tickets) arrive and be read.
    await asyncio.sleep(0.5)
    versions = {w.get_extra_info("ssl_object").version() if not args.plain else "plain" for _, w in held}
    print(f"ready {len(held)} failed {len(failures)} versions {','.join(sorted(versions))}", flush=True)

    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    loop.add_signal_handler(signal.SIGINT, done.set)
    loop.add_reader(sys.stdin.fileno(), lambda: done.set() if not sys.stdin.buffer.read1(4096) else None)
    try:
        await asyncio.wait_for(done.wait(), args.hold)
    except asyncio.TimeoutError:
        pass
    for _, writer in held:
        writer.transport.abort()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
