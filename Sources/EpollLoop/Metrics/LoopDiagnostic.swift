/// Something the library noticed and reports, through ``LoopDiagnostics``: a stalled loop, a failed accept, a
/// failed TLS handshake. The categories are open, so that later ones join without breaking a handler.
public struct LoopDiagnostic: Sendable, CustomStringConvertible {
    /// What kind of thing was noticed; compare with the static members.
    public struct Category: Hashable, Sendable, CustomStringConvertible {
        /// A short, stable name, suitable as a log label or metric label (`"stall"`).
        public let name: String

        /// A category named `name`.
        public init(_ name: String) { self.name = name }

        /// A callback held its loop longer than the stall threshold: see ``LoopDiagnostic/stall``.
        public static let stall = Category("stall")
        /// A listening socket's `accept` failed (out of descriptors or memory: the pending connections are
        /// shed and accepting pauses for 100 ms; or another error, which the listener's delegate also gets).
        public static let acceptFailure = Category("accept")
        /// A TLS handshake failed (a certificate not trusted, a protocol error, a timeout); a peer that only
        /// closed during the handshake is counted (``SocketCounts/tlsHandshakeFailures``) but not reported.
        public static let tlsHandshakeFailure = Category("tls")

        /// The name.
        public var description: String { name }
    }

    /// What kind of thing this is.
    public var category: Category
    /// The loop it happened on.
    public var loop: String
    /// A human-readable line (without the loop's name, which is in ``loop``).
    public var message: String
    /// The details when ``category`` is ``Category/stall``.
    public var stall: StallReport?

    /// A diagnostic of `category` on `loop`.
    public init(category: Category, loop: String, message: String, stall: StallReport? = nil) {
        self.category = category
        self.loop = loop
        self.message = message
        self.stall = stall
    }

    /// "`category` on loop `loop`: `message`".
    public var description: String { "\(category) on loop '\(loop)': \(message)" }
}
