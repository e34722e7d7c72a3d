// async-echo-server: the echo server written with async/await: one task per connection, each preferring
// its connection's event loop, so reads and writes complete on that loop with no thread hop.
//
//     async-echo-server --port 9000 [--host 127.0.0.1] [--loops N] [--tls-cert cert.pem --tls-key key.pem] [--metrics :9464]
import Dispatch
import EpollLoop
import ExampleSupport
import LoopSocket

/// Serves until SIGINT/SIGTERM, then shuts down. Everything is a local, released before the process exits,
/// so that a build with AddressSanitizer's leak check exits 0 (see echo-server's `serve`).
func serve(_ arguments: ServerArguments) {
    let group = arguments.makeGroup(name: "aecho")
    let tls = arguments.tlsConfiguration()
    // Accept failures and failed TLS handshakes are reported by the library (LoopDiagnostics: a line a second
    // at most on stderr).
    let listener = arguments.listen {
        try AsyncListener(
            host: arguments.host, port: arguments.port, tls: tls, group: group)
    }
    arguments.announceListening("async-echo-server", port: listener.localPort, loops: group.loops.count, tls: tls != nil)
    let metrics = arguments.serveMetrics(of: group)

    // The accept loop runs in a task on the first loop and each connection in a child task on its own loop, so
    // the server never uses the global concurrent executor. SIGINT/SIGTERM close the listener: the accept
    // loop ends, the connection tasks are cancelled, finish writing what they queued and close their
    // connections, and the group shuts down.
    let finished = DispatchSemaphore(value: 0)
    Task(executorPreference: group.loops[0]) {
        try? await withThrowingDiscardingTaskGroup { tasks in
            for try await connection in listener.connections {
                tasks.addTask(executorPreference: connection.eventLoop) {
                    // Ends with a graceful close, also when the task is cancelled at shutdown: the replies already
                    // written go out first (within 5 s, for a client that stops reading). An error here is a
                    // reset by the peer or that cancellation: either way the connection is done.
                    try? await connection.executeThenClose(closeTimeout: .seconds(5)) { connection in
                        while let chunk = try await connection.read(maxLength: 65536) {
                            try await connection.write(chunk)
                        }
                    }
                }
            }
            tasks.cancelAll()
        }
        finished.signal()
    }
    ServerArguments.waitForTermination()
    metrics?.close()
    listener.close()
    finished.wait()
    try? group.shutdownGracefully()
}

serve(ServerArguments.parse(.init(
    name: "async-echo-server",
    summary: "Echoes every byte back to its sender with async/await: a task per connection, on that\n"
        + "connection's event loop.")))
