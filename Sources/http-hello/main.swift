// http-hello: a small but correct HTTP/1.1 responder built the GCDAsyncSocket way. Every request gets
// 200 with the body "hello" (HEAD: the head alone); request bodies (Content-Length or chunked) are read past;
// pipelined requests are answered in order; malformed requests get 400 (431 for a head over 8 KiB or with
// more than 100 fields, 501 for an unknown transfer coding, 505 for another HTTP version) before the
// connection closes; a head not complete 60 s after its first byte gets 408; HTTP/1.1 connections persist
// unless "Connection: close", HTTP/1.0 ones only with "Connection: keep-alive"; a connection idle for 30 s is
// closed. The HTTP handling is in Sources/HTTPHello.
//
//     http-hello --port 8080 [--host 127.0.0.1] [--loops N] [--tls-cert cert.pem --tls-key key.pem] [--metrics :9464]
//                [--head-timeout 60] [--max-head 8192] [--max-header-fields 100]
import EpollLoop
import ExampleSupport
import HTTPHello
import LoopSocket

/// The limits on request heads from the command line (`--head-timeout`, `--max-head`, `--max-header-fields`);
/// exits with a message on a value out of range.
func limits(_ arguments: ServerArguments) -> HTTPHelloServer.Configuration {
    var configuration = HTTPHelloServer.Configuration()
    if let text = arguments.ownOptions["--head-timeout"] {
        guard let seconds = Double(text), seconds > 0, seconds <= 86_400 else {
            ServerArguments.fail("--head-timeout takes seconds, more than 0 and at most 86400, not '\(text)'")
        }
        configuration.headTimeout = seconds
    }
    if let text = arguments.ownOptions["--max-head"] {
        guard let bytes = Int(text), bytes >= 64, bytes <= 1 << 20 else {
            ServerArguments.fail("--max-head takes bytes from 64 to 1048576, not '\(text)'")
        }
        configuration.maxHeadLength = bytes
    }
    if let text = arguments.ownOptions["--max-header-fields"] {
        guard let count = Int(text), count >= 1, count <= 10_000 else {
            ServerArguments.fail("--max-header-fields takes a count from 1 to 10000, not '\(text)'")
        }
        configuration.maxHeaderFields = count
    }
    return configuration
}

/// Serves until SIGINT/SIGTERM, then shuts down. Everything is a local, released before the process exits,
/// so that a build with AddressSanitizer's leak check exits 0 (see echo-server's `serve`).
func serve(_ arguments: ServerArguments) {
    let group = arguments.makeGroup(name: "http")
    var configuration = limits(arguments)
    configuration.tls = arguments.tlsConfiguration(alpn: ["http/1.1"])
    let delegate = HTTPHelloServer(configuration: configuration)
    let listener = GCDAsyncSocket(delegate: delegate, delegateQueue: nil, loop: group.loops[0], group: group)
    // One 64 KiB read per turn (accepted sockets inherit it), not four: pipelined requests cost far more per
    // byte than echo (a 64 KiB read holds ~1,900 small GETs, ~1 ms of work here), so a pipelining flood delays
    // the other connections of its loop by ~1 ms a turn instead of ~4 ms (docs/hostile-clients.md).
    listener.options.maxReadsPerWakeup = 1
    arguments.listen { try listener.accept(onInterface: arguments.host, port: arguments.port) }
    arguments.announceListening("http-hello", port: listener.localPort, loops: group.loops.count, tls: configuration.tls != nil)
    let metrics = arguments.serveMetrics(of: group) { delegate.prometheusText() }
    ServerArguments.waitForTermination()
    metrics?.close()
    listener.disconnect()
    try? group.shutdownGracefully()
}

serve(ServerArguments.parse(.init(
    name: "http-hello",
    summary: "Answers every HTTP/1.1 request with 200 and the body \"hello\": keep-alive, pipelining, request\n"
        + "bodies read past; a malformed request gets 400 and a close.",
    own: [
        ("--head-timeout", "S", "seconds from a request head's first byte to its end (default 60; then 408)"),
        ("--max-head", "B", "the longest request head in bytes (default 8192; longer: 431)"),
        ("--max-header-fields", "N", "the most header fields in a head (default 100; more: 431)"),
    ])))
