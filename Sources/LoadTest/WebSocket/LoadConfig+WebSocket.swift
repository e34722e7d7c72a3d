/// `ws` mode's settings beyond the URL (whose path, host header and TLS go where http mode's do) and the
/// `--header` lines (shared with http mode).
package struct WebSocketSettings: Sendable, Equatable {
    /// What each connection does once the handshake is done.
    package enum Workload: Sendable, Equatable {
        /// Round trips of `--size`-byte binary messages through an echo server, each checked (closed loop
        /// with `--pipeline` in flight, or open loop with `--rate`/`--stages`).
        case echo
        /// Held connections sending a ping every `interval` seconds (`--ws-ping`); the pong's latency is
        /// measured from the ping's scheduled time.
        case heartbeat(interval: Double)
        /// Connections that only receive (`--ws-receive`): messages counted, and timed when they start with
        /// a send time (``WebSocketSettings/sendTime(_:)``).
        case receive
    }

    /// The workload (echo unless `--ws-ping` or `--ws-receive`).
    package var workload = Workload.echo
    /// Subprotocols offered in `Sec-WebSocket-Protocol` (`--ws-subprotocol`, repeatable), in order.
    package var subprotocols: [String] = []
    /// The longest message accepted from the server (`--ws-max-message`); a longer one fails its connection.
    package var maxMessage = 1 << 20
    /// A text message each connection sends once the handshake is done (`--ws-send`), such as a subscription.
    package var greeting: String?
    /// Plaintext over GCDAsyncSocket too, as `wss://` always is (otherwise `ws://` goes straight to the loop,
    /// ``WebSocketLoopTransport``): for tests that hold both transports to the same cases.
    var socketTransport = false

    /// Defaults: echo, no subprotocol, 1 MiB messages at most, no greeting.
    package init() {}
}
