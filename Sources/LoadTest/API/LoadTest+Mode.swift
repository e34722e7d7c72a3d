extension LoadTest {
    /// The kind of load a run generates: one of `loadtest`'s modes, or a ``LoadProtocol`` of your own.
    ///
    /// ```swift
    /// LoadTest.Configuration(mode: .echo, port: 9000)
    /// LoadTest.Configuration(mode: .http, url: "http://127.0.0.1:8080/")
    /// LoadTest.Configuration(mode: .custom(Ping()), port: 6379)
    /// ```
    public struct Mode: Sendable, Equatable, CustomStringConvertible {
        /// The mode's value inside the engine.
        let mode: LoadMode
        /// Whether it is a ``LoadProtocol``'s (run as ``LoadTestTool`` runs it: no mode name on its command line).
        let isCustom: Bool

        /// Fixed-size messages echoed back and checked byte for byte (`loadtest echo`).
        public static let echo = Mode(mode: .echo, isCustom: false)
        /// Bytes streamed one way, throughput only (`loadtest stream`).
        public static let stream = Mode(mode: .stream, isCustom: false)
        /// Connections opened and closed as fast as they go, or at a rate (`loadtest connect`).
        public static let connect = Mode(mode: .connect, isCustom: false)
        /// Connections opened and held, idle (`loadtest idle`).
        public static let idle = Mode(mode: .idle, isCustom: false)
        /// HTTP/1.1 requests (`loadtest http`; give ``Configuration/url``).
        public static let http = Mode(mode: .http, isCustom: false)
        /// UDP datagrams echoed back (`loadtest udp`).
        public static let udp = Mode(mode: .udp, isCustom: false)
        /// Requests and replies of a protocol described by options (`loadtest tcp`: `--send`, `--reply-*`,
        /// given in ``Configuration/arguments``).
        public static let tcp = Mode(mode: .tcp, isCustom: false)
        /// WebSocket messages (`loadtest ws`; give ``Configuration/url``).
        public static let ws = Mode(mode: .ws, isCustom: false)

        /// The request/response protocol `proto`, configured as given; its own ``LoadProtocol/options`` may also
        /// be given as flags in ``Configuration/arguments``, as on its command line.
        public static func custom<P: LoadProtocol>(_ proto: P) -> Mode {
            Mode(mode: LoadTestTool.mode(of: proto), isCustom: true)
        }

        /// The mode's name (`echo`, `http`, a protocol's ``LoadProtocol/name``).
        public var name: String { mode.name }

        /// The name.
        public var description: String { mode.name }

        /// Modes are equal when their names are, and both are loadtest's or both a ``LoadProtocol``'s.
        public static func == (a: Mode, b: Mode) -> Bool { a.mode == b.mode && a.isCustom == b.isCustom }
    }
}
