/// A property a fuzz target checks did not hold for an input: what was expected, in words.
package struct PropertyFailure: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }
}

/// Fails the input when `condition` is false.
@inline(__always)
func check(_ condition: Bool, _ message: @autoclosure () -> String) throws(PropertyFailure) {
    if !condition { throw PropertyFailure(message()) }
}

/// One fuzz target: a function of the bytes a peer could send, which calls a parser and checks properties of
/// what it returns (bounded state, incremental equals whole, round trips), not only that it returns.
package struct FuzzTarget: Sendable {
    /// The name `fuzz --target` and the corpus directory (Tests/Fuzz/Corpus/<name>) use.
    package let name: String
    /// What the target calls, in a line.
    package let summary: String
    /// The largest input worth generating (libFuzzer's `-max_len`).
    package let maxLength: Int
    /// Runs one input; throws when a property does not hold.
    package let run: @Sendable (UnsafeRawBufferPointer) throws(PropertyFailure) -> Void

    package init(
        name: String, summary: String, maxLength: Int,
        run: @escaping @Sendable (UnsafeRawBufferPointer) throws(PropertyFailure) -> Void
    ) {
        (self.name, self.summary, self.maxLength, self.run) = (name, summary, maxLength, run)
    }

    /// Every target, in the order `scripts/fuzz.sh` runs them.
    package static let all: [FuzzTarget] = [
        FuzzTarget(name: "http-head", summary: "http-hello's HTTPHeadParser.parse, whole and split",
                   maxLength: 4096, run: HTTPHeadTarget.run),
        FuzzTarget(name: "http-body", summary: "http-hello's HTTPBodyDecoder, one feed, split, byte at a time",
                   maxLength: 4096, run: HTTPBodyTarget.run),
        FuzzTarget(name: "metrics-request", summary: "LoopMetricsServer's request reader (MetricsResponder)",
                   maxLength: 4096, run: MetricsRequestTarget.run),
        FuzzTarget(name: "loadtest-response-head", summary: "loadtest's HTTPResponseHead.parse against a reference",
                   maxLength: 4096, run: ResponseHeadTarget.run),
        FuzzTarget(name: "loadtest-chunk-line", summary: "loadtest's HTTPChunkLine.size against a reference",
                   maxLength: 1024, run: ChunkLineTarget.run),
        FuzzTarget(name: "loadtest-body", summary: "loadtest's HTTPResponseReader: whole, split, byte at a time; against http-hello's decoder",
                   maxLength: 4096, run: ResponseFramingTarget.run),
        FuzzTarget(name: "ws-frames", summary: "loadtest's WebSocketParser: whole, split, byte at a time, fast path",
                   maxLength: 4096, run: WebSocketFramesTarget.run),
        FuzzTarget(name: "ws-roundtrip", summary: "WebSocketFrame's encoder, parsed back by WebSocketParser",
                   maxLength: 4096, run: WebSocketRoundTripTarget.run),
        FuzzTarget(name: "ws-handshake", summary: "WebSocketSession: the handshake response, then frames, whole and split",
                   maxLength: 4096, run: WebSocketHandshakeTarget.run),
        FuzzTarget(name: "utf8", summary: "WebSocketUTF8Validation.isValid against String(validating:)",
                   maxLength: 1024, run: UTF8Target.run),
        FuzzTarget(name: "tcp-reply", summary: "loadtest tcp's TCPReplyFormat (resp, length prefix, delimiter) and FramedConnection's loop",
                   maxLength: 4096, run: ReplyFramingTarget.run),
        FuzzTarget(name: "tls-pem", summary: "TLSCertificate (PEM, DER) and TLSIdentity from PEM",
                   maxLength: 8192, run: TLSPEMTarget.run),
        FuzzTarget(name: "tls-pkcs12", summary: "TLSIdentity(pkcs12:password:) (PKCS12Reader)",
                   maxLength: 8192, run: TLSPKCS12Target.run),
    ]

    /// The target called `name`, if there is one.
    package static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}
