import Foundation
import LoopSocket

/// GCDAsyncSocket's semantics as LoopSocket implements them, small enough to read in one sitting: two
/// FIFO queues, the peer's byte stream, and how a connection may end. The runner tells it every call in the
/// order the socket's loop handles them, every byte the peer sends and receives, and every callback in the
/// order it was delivered; the model says whether each callback was allowed and when nothing is left to
/// come. It checks rather than predicts where the kernel decides (how many bytes a read of available
/// bytes gets, when a write completes relative to a read), and predicts exactly everywhere else.
final class SocketReferenceModel {
    /// Behaviour of today's code the model reproduces deliberately rather than silently; see the report
    /// that introduced this test. Each is a deviation from GCDAsyncSocket worth deciding on in the redesign.
    enum Quirks {
        /// A write made after socketDidDisconnect is reported through didFailToWriteDataWithTag
        /// (badConfigError), so a callback does come after socketDidDisconnect; GCDAsyncSocket drops such a
        /// write silently. (Writes refused after a `disconnectAfter…` fail the same way, before or after it.)
        static let writesAfterDisconnectFailAfterSocketDidDisconnect = true
    }

    private struct QueuedRead {
        /// nil: startTLS's marker.
        var read: ModelRead?
        var buffer: NSMutableData?
        var partial = 0
        var isMarker: Bool { read == nil }
    }

    private struct QueuedWrite {
        var tag: Int
        var data: Data
        var partial = 0
        var isMarker: Bool { data.isEmpty }
    }

    private var reads: [QueuedRead] = []
    private var writes: [QueuedWrite] = []
    /// Everything the peer has sent (or queued to send), in order, and how much of it reads took.
    private var inbound = Data()
    private var consumed = 0
    /// Everything accepted for writing, in order; the peer must receive a prefix of it.
    private var outbound = Data()
    private var completedOutbound = 0
    private var peerReceived = 0
    private var peerEnd: RawSocket.End?
    /// Writes that must fail at once (`badConfigError`), by tag, in call order.
    private var refusals: [Int] = []
    private var tlsQueued = false
    private var secured = false
    private var noNewIO = false
    private var writeShut = false
    private var disconnectCalled = false
    private var closeRule: ModelCloseRule?
    private(set) var disconnected = false
    private var writable = true
    private var asksSeen = 0
    /// Where the stream stood after each completed read, by tag.
    private var readEnds: [Int: Int] = [:]
    private var history: [String] = []
    private(set) var failure: String?

    private var open: Bool { !disconnected && !disconnectCalled }

    // MARK: What the runner does

    /// A call, just before the runner makes it (`buffer` is the caller's buffer of a buffer variant).
    func issue(_ call: ModelCall, buffer: NSMutableData? = nil) {
        note("call \(call)")
        switch call {
        case .read(let read):
            guard !read.isNoOp, open, !noNewIO else { return }
            reads.append(QueuedRead(read: read, buffer: buffer))
        case .write(let data, let tag, _):
            guard !data.isEmpty else { return }
            guard open, !noNewIO, !writeShut else {
                if !disconnected || Quirks.writesAfterDisconnectFailAfterSocketDidDisconnect { refusals.append(tag) }
                return
            }
            writes.append(QueuedWrite(tag: tag, data: data))
            outbound.append(data)
        case .startTLS:
            guard open, !tlsQueued, !secured, !noNewIO else { return }
            tlsQueued = true
            reads.append(QueuedRead(read: nil))
            writes.append(QueuedWrite(tag: 0, data: Data()))
        case .closeWriteStream:
            if open { writeShut = true }
        case .disconnect:
            if open { disconnectCalled = true }
        case .disconnectAfterWriting:
            guard open else { return }
            noNewIO = true
            // Dropped at once, silently; startTLS's marker stays (the writes behind it go over TLS).
            reads.removeAll { !$0.isMarker }
        case .disconnectAfterReading, .disconnectAfterReadingAndWriting:
            if open { noNewIO = true }
        }
    }

    func expectClose(_ rule: ModelCloseRule) {
        note("expect \(rule)")
        closeRule = rule
    }

    var closeExpected: Bool { closeRule != nil }

    func peerSent(_ data: Data) { inbound.append(data) }

    /// Bytes the peer received (after those it received before).
    func peerGot(_ data: Data) {
        guard !data.isEmpty else { return }
        let end = peerReceived + data.count
        if end > outbound.count {
            fail("the peer received \(end) bytes; only \(outbound.count) were written")
        } else if outbound[peerReceived..<end] != data {
            fail("the peer received bytes \(peerReceived)..<\(end) different from those written")
        }
        peerReceived = end
    }

    /// The raw peer's stream ended.
    func peerEnded(_ end: RawSocket.End) {
        guard peerEnd == nil else { return }
        peerEnd = end
        note("peer stream ended: \(end)")
        if closeRule == nil && !writeShut {
            fail("the peer's stream ended (\(end)) while the socket was open")
        } else if closeRule == nil && (end != .eof || peerReceived != outbound.count) {
            fail("closeWriteStream: the peer's stream ended (\(end)) after \(peerReceived) of \(outbound.count) bytes")
        }
    }

    /// Where the stream stood once read `tag` completed (nil while it has not).
    func streamOffset(afterRead tag: Int) -> Int? { readEnds[tag] }

    /// Nothing queued is left to complete, and the peer has everything written (before a close: what a
    /// close failed never reaches it; ``isClosed(rawPeer:)`` checks that).
    var isSettled: Bool {
        reads.isEmpty && writes.isEmpty && refusals.isEmpty && (disconnected || peerReceived == outbound.count)
    }

    /// The close happened and the peer has seen what the rule promises. `rawPeer`: the peer is a raw socket,
    /// whose end of stream is observable.
    func isClosed(rawPeer: Bool) -> Bool {
        guard disconnected, refusals.isEmpty, let rule = closeRule else { return false }
        switch rule.writes {
        case .mustComplete: return peerReceived == outbound.count && (!rawPeer || peerEnd != nil)
        case .mustFail: return peerReceived == completedOutbound && (!rawPeer || peerEnd != nil)
        case .either: return !rawPeer || peerEnd != nil
        }
    }

    /// Checks the raw peer's end of stream against the close (once ``isClosed(rawPeer:)`` holds).
    func checkPeerEnd() {
        guard let rule = closeRule, let end = peerEnd else { return }
        if rule.writes != .either && end != .eof {
            fail("the peer's stream ended with \(end), not a clean end of stream")
        }
        if end == .eof && peerReceived < completedOutbound {
            fail("the peer saw end of stream after \(peerReceived) bytes; \(completedOutbound) were reported written")
        }
    }

    // MARK: Callbacks

    /// How many callbacks of each kind the model accepted (the run's coverage summary).
    private(set) var tally: [String: Int] = [:]

    func observe(_ event: SocketEvent) {
        note("event \(event)")
        tally["\(event)".prefix { $0 != "(" }.description, default: 0] += 1
        if disconnected {
            guard Quirks.writesAfterDisconnectFailAfterSocketDidDisconnect,
                  case .failedWrite(let tag, let error) = event, refusals.first == tag else {
                return fail("\(event) after socketDidDisconnect")
            }
            return refused(tag, error)
        }
        switch event {
        case .read(let data, let tag): readCompleted(data, tag: tag)
        case .readPartial(let n, let tag): readPartial(Int(n), tag: tag)
        case .wrote(let tag): writeCompleted(tag: tag)
        case .wrotePartial(let n, let tag): writePartial(Int(n), tag: tag)
        case .failedWrite(let tag, let error): writeFailed(tag: tag, error)
        case .disconnected(let error): didDisconnect(error)
        case .secured: didSecure()
        case .shouldTimeoutRead(let tag, let elapsed, let done): askedReadTimeout(tag: tag, elapsed: elapsed, done: Int(done))
        case .writability(let isWritable):
            if isWritable == writable { fail("writability(\(isWritable)) twice in a row") }
            writable = isWritable
        default:
            fail("unexpected callback \(event)")
        }
    }

    private func frontRead(_ tag: Int, _ what: String) -> (QueuedRead, ModelRead)? {
        guard let front = reads.first, let read = front.read, read.tag == tag else {
            fail("\(what) with tag \(tag), but the front of the read queue is \(reads.first.map { $0.read?.description ?? "startTLS" } ?? "empty")")
            return nil
        }
        return (front, read)
    }

    private func readCompleted(_ data: Data, tag: Int) {
        guard let (front, read) = frontRead(tag, "didRead") else { return }
        let rest = inbound[consumed...]
        let expectedCount: Int?
        switch read.kind {
        case .available(let max):
            expectedCount = nil
            if data.isEmpty || (max > 0 && data.count > max) {
                return fail("available read tag \(tag) got \(data.count) bytes (max \(max))")
            }
        case .length(let n):
            expectedCount = n
        case .separator(let sep, let max):
            guard let range = rest.firstRange(of: sep) else {
                return fail("separator read tag \(tag) completed, but the peer has sent no separator after offset \(consumed)")
            }
            let count = range.upperBound - consumed
            if max > 0 && count > max {
                return fail("separator read tag \(tag) completed with \(count) bytes past its maxLength \(max)")
            }
            expectedCount = count
        }
        if let expectedCount, data.count != expectedCount {
            return fail("read tag \(tag) (\(read.kind)) got \(data.count) bytes, expected \(expectedCount)")
        }
        guard data.count <= rest.count, rest.prefix(data.count) == data else {
            return fail("read tag \(tag) got bytes that are not the stream's at offset \(consumed) (\(data.count) bytes, \(rest.count) sent)")
        }
        if case .available = read.kind {} else if front.partial >= data.count {
            return fail("read tag \(tag): partial callbacks reported \(front.partial) of its \(data.count) bytes")
        }
        if case .buffer(let prefill, let offset) = read.buffer, let buffer = front.buffer {
            let contents = Data(referencing: buffer)
            if contents != prefill.prefix(offset) + data {
                return fail("read tag \(tag): the caller's buffer holds \(contents.count) bytes, not its \(offset) kept bytes and the data")
            }
        }
        consumed += data.count
        readEnds[tag] = consumed
        reads.removeFirst()
    }

    private func readPartial(_ n: Int, tag: Int) {
        guard let (front, read) = frontRead(tag, "didReadPartialDataOfLength") else { return }
        let total = front.partial + n
        switch read.kind {
        case .available:
            return fail("partial callback for available read tag \(tag)")
        case .length(let length) where total >= length:
            return fail("partial callbacks for length read tag \(tag) reach \(total) of \(length)")
        case .separator(_, let max) where max > 0 && total >= max:
            return fail("partial callbacks for separator read tag \(tag) reach its maxLength \(max)")
        default:
            break
        }
        if n <= 0 || consumed + total > inbound.count {
            return fail("partial callback of \(n) for read tag \(tag): more than the peer sent")
        }
        reads[0].partial = total
    }

    private func writeCompleted(tag: Int) {
        guard let front = writes.first, !front.isMarker, front.tag == tag else {
            return fail("didWrite tag \(tag), but the front of the write queue is \(writes.first.map { $0.isMarker ? "startTLS" : "tag \($0.tag)" } ?? "empty")")
        }
        if closeRule?.writes == .mustFail { return fail("write tag \(tag) completed, but the close must fail it") }
        completedOutbound += front.data.count
        writes.removeFirst()
    }

    private func writePartial(_ n: Int, tag: Int) {
        guard let front = writes.first, !front.isMarker, front.tag == tag, n > 0, front.partial + n < front.data.count else {
            return fail("didWritePartialDataOfLength \(n) tag \(tag) does not fit the front write")
        }
        writes[0].partial += n
    }

    private func refused(_ tag: Int, _ error: any Error) {
        if Self.codeName(error) != GCDAsyncSocketErrorCodeName.badConfigError.rawValue { fail("write tag \(tag) refused with \(error), not badConfigError") }
        refusals.removeFirst()
    }

    private func writeFailed(tag: Int, _ error: any Error) {
        if refusals.first == tag { return refused(tag, error) }
        guard let rule = closeRule else { return fail("write tag \(tag) failed (\(error)) with no close expected") }
        if rule.writes == .mustComplete { return fail("write tag \(tag) failed (\(error)); the close must let it complete") }
        // startTLS's write-queue marker is not a write of the user's: a close fails the writes around it only.
        while writes.first?.isMarker == true { writes.removeFirst() }
        guard let front = writes.first, front.tag == tag else {
            return fail("write tag \(tag) failed, but the front of the write queue is \(writes.first.map { "tag \($0.tag)" } ?? "empty")")
        }
        // A plain disconnect fails them as closed; any other close with its own error.
        let expected = rule.error?.rawValue ?? GCDAsyncSocketErrorCodeName.closedError.rawValue
        if Self.codeName(error) != expected { return fail("write tag \(tag) failed with \(error), expected \(expected)") }
        writes.removeFirst()
    }

    private func didDisconnect(_ error: (any Error)?) {
        guard let rule = closeRule else { return fail("unexpected socketDidDisconnect(\(error.map { "\($0)" } ?? "nil"))") }
        let actual: String? = error.map { Self.codeName($0) ?? "\($0)" }
        if actual != rule.error?.rawValue {
            return fail("socketDidDisconnect(\(error.map { "\($0)" } ?? "nil")), expected \(rule.error?.rawValue ?? "nil")")
        }
        if let left = writes.first(where: { !$0.isMarker }) {
            return fail("socketDidDisconnect before write tag \(left.tag) completed or failed")
        }
        switch rule.reads {
        case .dropped:
            break
        case .mustComplete:
            if let left = reads.first { return fail("socketDidDisconnect before \(left.read?.description ?? "startTLS") completed") }
        case .untilEndOfStream:
            if let front = reads.first, let read = front.read, completes(read, from: consumed) {
                return fail("socketDidDisconnect at end of stream, but \(read) could complete from the \(inbound.count - consumed) bytes left")
            }
        }
        if asksSeen != rule.timeoutAsks.count {
            return fail("socketDidDisconnect after \(asksSeen) shouldTimeoutRead calls, expected \(rule.timeoutAsks.count)")
        }
        reads = []
        writes = []
        disconnected = true
    }

    private func didSecure() {
        guard tlsQueued, reads.first?.isMarker == true, writes.first?.isMarker == true else {
            return fail("socketDidSecure before both queues reached startTLS")
        }
        reads.removeFirst()
        writes.removeFirst()
        tlsQueued = false
        secured = true
    }

    private func askedReadTimeout(tag: Int, elapsed: TimeInterval, done: Int) {
        guard let (front, _) = frontRead(tag, "shouldTimeoutRead"), let asks = closeRule?.timeoutAsks,
              asksSeen < asks.count else {
            return fail("shouldTimeoutRead tag \(tag) not expected")
        }
        if abs(elapsed - asks[asksSeen]) > 1e-9 { return fail("shouldTimeoutRead elapsed \(elapsed), expected \(asks[asksSeen])") }
        if done != front.partial { return fail("shouldTimeoutRead bytesDone \(done), partial callbacks said \(front.partial)") }
        asksSeen += 1
    }

    /// Whether `read` completes from the bytes the peer sent after `offset`.
    private func completes(_ read: ModelRead, from offset: Int) -> Bool {
        let rest = inbound[offset...]
        switch read.kind {
        case .available: return !rest.isEmpty
        case .length(let n): return rest.count >= n
        case .separator(let sep, let max):
            guard let range = rest.firstRange(of: sep) else { return false }
            return max == 0 || range.upperBound - offset <= max
        }
    }

    /// The model's name for `error`'s code (nil for errors that are not GCDAsyncSocketError).
    static func codeName(_ error: any Error) -> String? {
        switch error.socketError?.code {
        case .closedError?: return GCDAsyncSocketErrorCodeName.closedError.rawValue
        case .readTimeoutError?: return GCDAsyncSocketErrorCodeName.readTimeoutError.rawValue
        case .readMaxedOutError?: return GCDAsyncSocketErrorCodeName.readMaxedOutError.rawValue
        case .badConfigError?: return GCDAsyncSocketErrorCodeName.badConfigError.rawValue
        case let code?: return "\(code)"
        case nil: return nil
        }
    }

    // MARK: Reporting

    func note(_ line: String) {
        history.append(line)
        if history.count > 60 { history.removeFirst(history.count - 40) }
    }

    func fail(_ message: String) {
        guard failure == nil else { return }
        failure = message + "\n  model: \(reads.count) reads, \(writes.count) writes queued, stream \(consumed)/\(inbound.count) read, "
            + "\(peerReceived)/\(outbound.count) received by the peer, close \(closeRule.map { "\($0)" } ?? "none")"
            + "\n  last calls and callbacks:\n    " + history.suffix(25).joined(separator: "\n    ")
    }
}
