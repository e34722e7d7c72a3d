import Foundation

/// What a read asks for (GCDAsyncSocket's three kinds).
enum ModelReadKind: CustomStringConvertible {
    /// Whatever is available, at most `maxLength` bytes when it is not 0.
    case available(maxLength: Int)
    case length(Int)
    /// Up to and including the separator; past `maxLength` (when not 0) the connection fails.
    case separator(Data, maxLength: Int)

    var description: String {
        switch self {
        case .available(let max): return "available(max \(max))"
        case .length(let n): return "length(\(n))"
        case .separator(let sep, let max): return "separator(\(Array(sep)), max \(max))"
        }
    }
}

/// Which of the read methods is called: the plain one, or a `buffer:bufferOffset:` variant with no
/// buffer or with a caller's buffer that already holds `prefill`.
enum ModelReadBuffer {
    case none
    case nilBuffer
    case buffer(prefill: Data, offset: Int)
}

/// One read call.
struct ModelRead: CustomStringConvertible {
    var kind: ModelReadKind
    var tag: Int
    var timeout: TimeInterval
    var buffer: ModelReadBuffer = .none

    /// Calls LoopSocket must ignore entirely (no queue entry, no callback), as GCDAsyncSocket does.
    var isNoOp: Bool {
        if case .buffer(let prefill, let offset) = buffer, offset > prefill.count { return true }
        switch kind {
        case .available: return false
        case .length(let n): return n == 0
        case .separator(let sep, let max): return sep.isEmpty || (max > 0 && max < sep.count)
        }
    }

    var description: String {
        var text = "read(\(kind), tag \(tag), timeout \(timeout)"
        switch buffer {
        case .none: break
        case .nilBuffer: text += ", nil buffer"
        case .buffer(let prefill, let offset): text += ", buffer \(prefill.count) at \(offset)"
        }
        return text + ")"
    }
}

/// One call on the socket under test.
enum ModelCall: CustomStringConvertible {
    case read(ModelRead)
    case write(Data, tag: Int, timeout: TimeInterval)
    case startTLS
    case closeWriteStream
    case disconnect
    case disconnectAfterReading
    case disconnectAfterWriting
    case disconnectAfterReadingAndWriting

    var description: String {
        switch self {
        case .read(let read): return read.description
        case .write(let data, let tag, let timeout): return "write(\(data.count) bytes, tag \(tag), timeout \(timeout))"
        case .startTLS: return "startTLS"
        case .closeWriteStream: return "closeWriteStream"
        case .disconnect: return "disconnect"
        case .disconnectAfterReading: return "disconnectAfterReading"
        case .disconnectAfterWriting: return "disconnectAfterWriting"
        case .disconnectAfterReadingAndWriting: return "disconnectAfterReadingAndWriting"
        }
    }
}

/// What the peer does.
enum PeerAction: CustomStringConvertible {
    /// Sends these bytes (one `send`, or one write of the peer socket).
    case send(Data)
    /// A peer socket reads exactly this many bytes of what the socket under test wrote (a raw peer
    /// receives continuously and ignores this).
    case receive(Int)
    /// A peer socket takes whatever arrives from now on (used where the model cannot know how much will).
    case receiveContinuously
    case startTLS
    /// `shutdown(SHUT_WR)` (a peer socket: `closeWriteStream`) once what it queued is sent.
    case shutdownWrite

    var description: String {
        switch self {
        case .send(let data): return "peer send(\(data.count))"
        case .receive(let n): return "peer receive(\(n))"
        case .receiveContinuously: return "peer receiveContinuously"
        case .startTLS: return "peer startTLS"
        case .shutdownWrite: return "peer shutdownWrite"
        }
    }
}

/// How the model expects the connection to end; set before the step that ends it.
struct ModelCloseRule: CustomStringConvertible {
    enum Writes { case mustComplete, mustFail, either }
    enum Reads {
        /// Dropped silently, whatever is queued.
        case dropped
        /// Every queued read completes before the close.
        case mustComplete
        /// The peer's end of stream: reads the stream satisfies complete, the first it cannot is dropped.
        case untilEndOfStream
    }

    var error: GCDAsyncSocketErrorCodeName?
    var writes: Writes
    var reads: Reads
    /// `elapsed` of each expected `shouldTimeoutReadWithTag` (the front read's timeout, then extended).
    var timeoutAsks: [TimeInterval] = []

    var description: String { "close(\(error.map { "\($0)" } ?? "nil"), writes \(writes), reads \(reads), asks \(timeoutAsks))" }
}

/// The error codes the model predicts (its own spelling, so the script does not depend on the library).
enum GCDAsyncSocketErrorCodeName: String {
    case closedError, readTimeoutError, readMaxedOutError, badConfigError
}

/// One step of a script.
enum ModelStep: CustomStringConvertible {
    /// Calls made in one task on the socket's loop: nothing runs between them (the pump is deferred).
    case turn([ModelCall])
    /// One call from the test thread.
    case call(ModelCall)
    case peer(PeerAction)
    /// Waits for the available-bytes read `after` to complete, then reads the rest of its peer segment (which
    /// ends at stream offset `segmentEnd`) by length with `tag`: the only runtime-sized call, so that an
    /// available read's unpredictable size does not shift every later read.
    case drain(after: Int, segmentEnd: Int, tag: Int)
    /// Waits until everything queued has completed on both sides.
    case sync
    case expectClose(ModelCloseRule)
    /// Waits for socketDidDisconnect and for the peer to have seen what the close rule promises.
    case awaitClose
    /// What `shouldTimeoutReadWithTag` answers, in order (then 0).
    case timeoutReplies([TimeInterval])

    var description: String {
        switch self {
        case .turn(let calls): return "turn[\(calls.map(\.description).joined(separator: "; "))]"
        case .call(let call): return call.description
        case .peer(let action): return action.description
        case .drain(let after, let end, let tag): return "drain(after tag \(after), to \(end), tag \(tag))"
        case .sync: return "sync"
        case .expectClose(let rule): return "expect \(rule)"
        case .awaitClose: return "awaitClose"
        case .timeoutReplies(let replies): return "timeoutReplies(\(replies))"
        }
    }
}

/// The connection a case runs on.
struct ModelSetup: CustomStringConvertible {
    enum Transport { case tcp, unix }
    var transport: Transport
    /// The socket under test is the accepted side (else it connects).
    var sutAccepts: Bool
    /// The peer is a second GCDAsyncSocket (needed for TLS), else a raw nonblocking socket.
    var peerIsSocket: Bool
    var sutIsTLSServer: Bool
    /// Callbacks on a delegate queue instead of inline on the loop.
    var delegateQueue: Bool
    /// A small high water mark (accepted sockets then pause reading while their writes back up).
    var smallWaterMarks: Bool
    var maxReadsPerWakeup: Int

    var tlsCapable: Bool { peerIsSocket && transport == .tcp }

    var description: String {
        "\(transport) sut=\(sutAccepts ? "accepted" : "client") peer=\(peerIsSocket ? "GCDAsyncSocket" : "raw")"
            + (tlsCapable ? " tls-\(sutIsTLSServer ? "server" : "client")" : "")
            + " delegateQueue=\(delegateQueue) smallWaterMarks=\(smallWaterMarks) maxReadsPerWakeup=\(maxReadsPerWakeup)"
    }
}

/// A case: its connection and its steps, all derived from one seed.
struct ModelScript {
    let seed: UInt64
    let setup: ModelSetup
    let steps: [ModelStep]

    init(seed: UInt64) {
        var generator = ModelScriptGenerator(seed: seed)
        self.seed = seed
        self.setup = generator.setup
        self.steps = generator.make()
    }
}
