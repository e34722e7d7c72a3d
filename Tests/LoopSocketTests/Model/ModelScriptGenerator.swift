import Foundation

/// Makes a case's script from its seed. The script depends on the seed alone: the generator keeps only
/// what the calls themselves determine (bytes the peer sends, TLS started, write side shut), never what a
/// run observed. Every round leaves the streams aligned: the reads queued in a round take exactly the
/// bytes the peer sends in it, so later reads, startTLS and the close are predictable.
struct ModelScriptGenerator {
    private var rng: SeededGenerator
    let setup: ModelSetup
    private var steps: [ModelStep] = []
    private var tagCounter: Int
    /// Bytes the peer has sent so far in the script (the stream offset of the next byte).
    private var inbound = 0
    private var tlsStarted = false
    private var writeShut = false

    /// A largest write or read; a few hundred KiB, so that writes outgrow the kernel's buffers and reads
    /// span many `recv`s and records.
    static let largest = 300 * 1024

    init(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let transport: ModelSetup.Transport = rng.chance(0.25) ? .unix : .tcp
        let peerIsSocket = rng.chance(0.5)
        // A raw peer has no Unix listener in the test support: over Unix it connects to the socket under test.
        let sutAccepts = transport == .unix && !peerIsSocket ? true : rng.chance(0.5)
        let tlsCapable = peerIsSocket && transport == .tcp
        let sutIsTLSServer = rng.chance(0.5)
        let delegateQueue = rng.chance(0.3)
        // Small water marks make accepted sockets pause reading often; a TLS-capable case keeps the
        // defaults (see `tlsRoundByteLimit`).
        let smallWaterMarks = rng.chance(0.3)
        setup = ModelSetup(
            transport: transport, sutAccepts: sutAccepts, peerIsSocket: peerIsSocket, sutIsTLSServer: sutIsTLSServer,
            delegateQueue: delegateQueue, smallWaterMarks: smallWaterMarks && !tlsCapable, maxReadsPerWakeup: rng.int(1...4))
        tagCounter = rng.int(1...1000)
        self.rng = rng
    }

    mutating func make() -> [ModelStep] {
        for _ in 0..<rng.int(1...8) { round() }
        terminal()
        postClose()
        return steps
    }

    // MARK: Pieces

    /// A fresh tag: unique within the case (so every callback names one call), never 0 (startTLS's
    /// markers carry 0), sometimes negative (tags are opaque).
    private mutating func nextTag() -> Int {
        tagCounter += rng.int(1...5)
        return rng.chance(0.2) ? -tagCounter : tagCounter
    }

    /// No timeout, or one long enough never to fire during a case.
    private mutating func longTimeout() -> TimeInterval {
        rng.chance(0.6) ? -1 : Double(rng.int(30...120))
    }

    private mutating func separator() -> Data {
        switch rng.int(0...3) {
        case 0: return Data("\r\n".utf8)
        case 1: return Data("\n".utf8)
        case 2: return Data([0])
        default: return rng.bytes(rng.int(1...5))
        }
    }

    private mutating func readBuffer(allowPlain: Bool = true) -> ModelReadBuffer {
        switch rng.int(0...9) {
        case 0...5 where allowPlain: return .none
        case 6: return .nilBuffer
        default:
            let prefill = rng.bytes(rng.int(0...16))
            return .buffer(prefill: prefill, offset: rng.int(0...prefill.count))
        }
    }

    /// A read LoopSocket must ignore (bad parameters), with the segment it would have taken: none.
    private mutating func noOpRead() -> ModelRead {
        let tag = nextTag()
        switch rng.int(0...3) {
        case 0: return ModelRead(kind: .length(0), tag: tag, timeout: -1)
        case 1: return ModelRead(kind: .separator(Data(), maxLength: 0), tag: tag, timeout: -1)
        case 2: return ModelRead(kind: .separator(Data("\r\n".utf8), maxLength: 1), tag: tag, timeout: -1)
        default:
            let prefill = rng.bytes(rng.int(0...8))
            return ModelRead(kind: .length(rng.int(1...10)), tag: tag, timeout: -1,
                             buffer: .buffer(prefill: prefill, offset: prefill.count + rng.int(1...4)))
        }
    }

    /// A read of a length or separator kind and the exact bytes that complete it.
    private mutating func completableRead(maxBytes: Int) -> (ModelRead, Data) {
        let tag = nextTag()
        if rng.chance(0.5) {
            let length = rng.size(max: maxBytes)
            return (ModelRead(kind: .length(length), tag: tag, timeout: longTimeout(), buffer: readBuffer()), rng.bytes(length))
        }
        let sep = separator()
        let body = rng.bytes(rng.size(max: maxBytes) - 1, excluding: sep[0])
        let segment = body + sep
        let maxLength: Int
        switch rng.int(0...3) {
        case 0, 1: maxLength = 0
        case 2: maxLength = segment.count  // exactly the message: GCDAsyncSocket's boundary, a success
        default: maxLength = segment.count + rng.int(1...64)
        }
        let read = ModelRead(kind: .separator(sep, maxLength: maxLength), tag: tag, timeout: longTimeout(), buffer: readBuffer())
        return (read, segment)
    }

    // MARK: Rounds

    /// Items of the socket-under-test side of a round, before they are merged with the peer's.
    private enum SutItem {
        case call(ModelCall)
        /// A drain that needs the peer's first `peerCount` actions done, and no later one.
        case drain(after: Int, segmentEnd: Int, tag: Int, peerCount: Int)
    }

    /// An accepted socket stops reading while more than its high water mark is queued to write, and bytes
    /// queued behind startTLS count: with a read queued before startTLS, that socket never reads again
    /// (nothing it queued behind startTLS can drain before the handshake, and the handshake waits for the
    /// read). A TLS round therefore writes less than the default mark on each side, and starts settled.
    static let tlsRoundByteLimit = 200 * 1024

    private mutating func round() {
        let tlsHere = setup.tlsCapable && !tlsStarted && !writeShut && rng.chance(0.4)
        if tlsHere { steps.append(.sync) }
        var sut: [SutItem] = []
        var peer: [PeerAction] = []
        let budget = tlsHere ? Self.tlsRoundByteLimit / 8 : Self.largest
        for phase in 0..<(tlsHere ? 2 : 1) {
            if phase == 1 {
                sut.append(.call(.startTLS))
                peer.append(.startTLS)
                tlsStarted = true
            }
            var writes: [SutItem] = []
            var receives: [PeerAction] = []
            for _ in 0..<rng.int(0...3) {
                let data = rng.chance(0.1) ? Data() : rng.bytes(rng.size(max: budget))
                writes.append(.call(.write(data, tag: nextTag(), timeout: longTimeout())))
                if !data.isEmpty && !writeShut { receives.append(.receive(data.count)) }
            }
            // The peer's reads go first: an accepted socket under test pauses its reads while its writes
            // back up, and a drain below waits for a read.
            if setup.peerIsSocket { peer += mergedReceives(receives) }
            var reads: [SutItem] = []
            var segments = Data()
            // A TLS 1.3 server sends its session tickets after the handshake; a client socket that never
            // reads again leaves them in the kernel, and closing with unread bytes sends a reset that can
            // destroy the tail of what it wrote. A client socket under test reads once after startTLS.
            let mustRead = phase == 1 && !setup.sutIsTLSServer
            let count = max(mustRead ? 1 : 0, rng.int(0...4))
            for index in 0..<count {
                if rng.chance(0.1) { reads.append(.call(.read(noOpRead()))) }
                if index == count - 1 && rng.chance(0.35) {
                    // An available-bytes read is last: it may take any part of its segment.
                    for chunk in rng.splits(of: segments) { peer.append(.send(chunk)) }
                    inbound += segments.count
                    segments = Data()
                    let length = rng.size(max: budget)
                    let segment = rng.bytes(length)
                    let capped = rng.chance(0.5)
                    let maxLength = capped ? rng.int(1...(length + 8)) : 0
                    let read = ModelRead(kind: .available(maxLength: maxLength), tag: nextTag(), timeout: longTimeout(),
                                         buffer: capped ? readBuffer(allowPlain: false) : readBuffer())
                    reads.append(.call(.read(read)))
                    for chunk in rng.splits(of: segment) { peer.append(.send(chunk)) }
                    inbound += segment.count
                    reads.append(.drain(after: read.tag, segmentEnd: inbound, tag: nextTag(), peerCount: peer.count))
                } else {
                    let (read, segment) = completableRead(maxBytes: budget)
                    reads.append(.call(.read(read)))
                    segments += segment
                }
            }
            for chunk in rng.splits(of: segments) { peer.append(.send(chunk)) }
            inbound += segments.count
            sut += interleave(reads, writes)
        }
        if !writeShut && !setup.tlsCapable && rng.chance(0.1) {
            sut.append(.call(.closeWriteStream))
            writeShut = true
        }
        steps += merge(sut, peer)
        // After a TLS round the next round's writes would queue behind a startTLS marker still waiting.
        if tlsHere || rng.chance(0.4) { steps.append(.sync) }
    }

    /// The peer's reads of the round's writes: one per write, or several joined into one.
    private mutating func mergedReceives(_ receives: [PeerAction]) -> [PeerAction] {
        guard rng.chance(0.5) else { return receives }
        let total = receives.reduce(0) { sum, action in
            if case .receive(let n) = action { return sum + n }
            return sum
        }
        return total > 0 ? [.receive(total)] : []
    }

    /// A random interleaving of two sequences that keeps each one's order.
    private mutating func interleave<T>(_ a: [T], _ b: [T]) -> [T] {
        var result: [T] = []
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && rng.chance(0.5)) {
                result.append(a[i]); i += 1
            } else {
                result.append(b[j]); j += 1
            }
        }
        return result
    }

    /// Merges the two sides into steps: each side keeps its order, a drain comes after the peer actions it
    /// needs and before the ones after them, and runs of calls go out one by one or in one loop turn.
    private mutating func merge(_ sut: [SutItem], _ peer: [PeerAction]) -> [ModelStep] {
        var result: [ModelStep] = []
        var pendingTurn: [ModelCall]?
        var i = 0, j = 0
        func flushTurn(_ result: inout [ModelStep], _ pendingTurn: inout [ModelCall]?) {
            if let turn = pendingTurn, !turn.isEmpty { result.append(.turn(turn)) }
            pendingTurn = nil
        }
        while i < sut.count || j < peer.count {
            // The first drain still ahead bounds how far the peer may go.
            let limit = sut[i...].lazy.compactMap { item -> Int? in
                if case .drain(_, _, _, let needed) = item { return needed }
                return nil
            }.first ?? peer.count
            let sutReady: Bool
            if i < sut.count, case .drain(_, _, _, let needed) = sut[i] { sutReady = j >= needed } else { sutReady = i < sut.count }
            let peerReady = j < peer.count && j < limit
            precondition(sutReady || peerReady, "script merge stuck")
            if sutReady && (!peerReady || rng.chance(0.5)) {
                switch sut[i] {
                case .call(let call):
                    if pendingTurn != nil {
                        pendingTurn!.append(call)
                    } else if rng.chance(0.3) {
                        pendingTurn = [call]
                    } else {
                        result.append(.call(call))
                    }
                case .drain(let after, let end, let tag, _):
                    flushTurn(&result, &pendingTurn)
                    result.append(.drain(after: after, segmentEnd: end, tag: tag))
                }
                i += 1
            } else {
                flushTurn(&result, &pendingTurn)
                result.append(.peer(peer[j]))
                j += 1
            }
        }
        flushTurn(&result, &pendingTurn)
        return result
    }

    // MARK: The end

    /// Fresh writes for a terminal turn, with the peer's reads of them when they must arrive.
    private mutating func terminalWrites(peerReceives: Bool) -> [ModelCall] {
        var calls: [ModelCall] = []
        var total = 0
        for _ in 0..<rng.int(0...3) {
            let data = rng.bytes(rng.size(max: setup.tlsCapable ? Self.tlsRoundByteLimit / 4 : Self.largest))
            calls.append(.write(data, tag: nextTag(), timeout: longTimeout()))
            if !writeShut { total += data.count }
        }
        if peerReceives && setup.peerIsSocket && total > 0 { steps.append(.peer(.receive(total))) }
        return calls
    }

    /// Completable reads for a terminal turn and the bytes the peer sends for them.
    private mutating func terminalReads(max: Int) -> ([ModelCall], Data) {
        var calls: [ModelCall] = []
        var bytes = Data()
        for _ in 0..<rng.int(0...max) {
            let (read, segment) = completableRead(maxBytes: 64 * 1024)
            calls.append(.read(read))
            bytes += segment
        }
        return (calls, bytes)
    }

    private mutating func sendAll(_ bytes: Data) {
        for chunk in rng.splits(of: bytes) { steps.append(.peer(.send(chunk))) }
        inbound += bytes.count
    }

    /// Ends the connection one of the ways GCDAsyncSocket's semantics fix, from a settled connection, with
    /// fresh operations queued in the same loop turn (so which of them run first is determined).
    private mutating func terminal() {
        steps.append(.sync)
        switch rng.int(0...6) {
        case 0:
            // disconnect: queued writes fail, queued reads vanish, then socketDidDisconnect(nil).
            steps.append(.expectClose(ModelCloseRule(error: nil, writes: .mustFail, reads: .dropped)))
            var calls = terminalWrites(peerReceives: false) + terminalReads(max: 3).0
            if setup.tlsCapable && !tlsStarted && rng.chance(0.4) { calls.insert(.startTLS, at: rng.int(0...calls.count)) }
            steps.append(.turn(calls + [.disconnect]))
        case 1:
            steps.append(.expectClose(ModelCloseRule(error: nil, writes: .mustComplete, reads: .dropped)))
            let writes = terminalWrites(peerReceives: true)
            let late: [ModelCall] = [.read(ModelRead(kind: .length(1), tag: nextTag(), timeout: -1)),
                                     .write(rng.bytes(rng.int(1...100)), tag: nextTag(), timeout: -1)]
            steps.append(.turn(writes + terminalReads(max: 3).0 + [.disconnectAfterWriting] + late))
        case 2:
            steps.append(.expectClose(ModelCloseRule(error: nil, writes: .mustComplete, reads: .mustComplete)))
            let writes = terminalWrites(peerReceives: true)
            let (reads, bytes) = terminalReads(max: 3)
            steps.append(.turn(writes + reads + [.disconnectAfterReadingAndWriting]))
            sendAll(bytes)
        case 3:
            steps.append(.expectClose(ModelCloseRule(error: nil, writes: .either, reads: .mustComplete)))
            if setup.peerIsSocket { steps.append(.peer(.receiveContinuously)) }
            let writes = terminalWrites(peerReceives: false)
            let (reads, bytes) = terminalReads(max: 3)
            steps.append(.turn(writes + reads + [.disconnectAfterReading]))
            sendAll(bytes)
        case 4:
            readTimeoutTerminal()
        case 5:
            maxedOutTerminal()
        default:
            peerShutdownTerminal()
        }
        steps.append(.awaitClose)
    }

    /// A read with a short timeout the peer never satisfies: the connection closes with readTimeoutError,
    /// after the delegate was asked once per extension it gave.
    private mutating func readTimeoutTerminal() {
        let timeout = Double(rng.int(20...150)) / 1000
        let extensions = (0..<rng.int(0...2)).map { _ in Double(rng.int(10...50)) / 1000 }
        var asks = [timeout]
        for more in extensions { asks.append(asks.last! + more) }
        steps.append(.timeoutReplies(extensions))
        steps.append(.expectClose(ModelCloseRule(error: .readTimeoutError, writes: .either, reads: .dropped, timeoutAsks: asks)))
        if setup.peerIsSocket { steps.append(.peer(.receiveContinuously)) }
        let tag = nextTag()
        let read: ModelRead
        var partial = Data()
        switch rng.int(0...2) {
        case 0:
            read = ModelRead(kind: .available(maxLength: 0), tag: tag, timeout: timeout, buffer: readBuffer())
        case 1:
            let length = rng.int(2...5000)
            partial = rng.bytes(rng.int(0...(length - 1)))
            read = ModelRead(kind: .length(length), tag: tag, timeout: timeout, buffer: readBuffer())
        default:
            let sep = separator()
            partial = rng.bytes(rng.int(0...500), excluding: sep[0])
            read = ModelRead(kind: .separator(sep, maxLength: 0), tag: tag, timeout: timeout, buffer: readBuffer())
        }
        let behind = terminalReads(max: 2).0
        steps.append(.turn([.read(read)] + behind + terminalWrites(peerReceives: false)))
        sendAll(partial)
    }

    /// A separator read whose maxLength the peer's bytes reach without the separator.
    private mutating func maxedOutTerminal() {
        steps.append(.expectClose(ModelCloseRule(error: .readMaxedOutError, writes: .either, reads: .dropped)))
        if setup.peerIsSocket { steps.append(.peer(.receiveContinuously)) }
        let sep = separator()
        let maxLength = rng.int(max(1, sep.count)...(rng.chance(0.5) ? 64 : 40_000))
        let read = ModelRead(kind: .separator(sep, maxLength: maxLength), tag: nextTag(), timeout: longTimeout(), buffer: readBuffer())
        steps.append(.turn([.read(read)] + terminalReads(max: 2).0 + terminalWrites(peerReceives: false)))
        sendAll(rng.bytes(maxLength, excluding: sep[0]))
    }

    /// The peer shuts down its write side: reads the stream satisfies complete, the first it cannot is
    /// dropped with the rest, queued writes are still written, then socketDidDisconnect(closedError).
    private mutating func peerShutdownTerminal() {
        steps.append(.expectClose(ModelCloseRule(error: .closedError, writes: .mustComplete, reads: .untilEndOfStream)))
        let writes = terminalWrites(peerReceives: true)
        var (reads, bytes) = terminalReads(max: 3)
        if rng.chance(0.3) {
            // An available read takes part of what is left; a length read that cannot complete takes the rest
            // and is dropped, so nothing stays in the prebuffer (which would keep the socket open for reads).
            let extra = rng.bytes(rng.int(1...3000))
            reads.append(.read(ModelRead(kind: .available(maxLength: 0), tag: nextTag(), timeout: -1)))
            reads.append(.read(ModelRead(kind: .length(extra.count + rng.int(1...100)), tag: nextTag(), timeout: -1)))
            bytes += extra
        } else if rng.chance(0.5) {
            let (read, segment) = completableRead(maxBytes: 4096)
            reads.append(.read(read))
            bytes += segment.prefix(rng.int(0...(segment.count - 1)))
        }
        steps.append(.turn(interleave(writes, reads)))
        sendAll(bytes)
        steps.append(.peer(.shutdownWrite))
    }

    /// After socketDidDisconnect: reads, startTLS and disconnects do nothing; a write fails at once.
    private mutating func postClose() {
        var calls: [ModelCall] = [
            .read(ModelRead(kind: .length(rng.int(1...10)), tag: nextTag(), timeout: -1)),
            .read(ModelRead(kind: .available(maxLength: 0), tag: nextTag(), timeout: 1)),
            .startTLS, .closeWriteStream, .disconnectAfterReadingAndWriting, .disconnect,
        ]
        calls.shuffle(using: &rng)
        // The write last: once its failure is seen, every call before it has been handled.
        calls.append(.write(rng.bytes(rng.int(1...64)), tag: nextTag(), timeout: -1))
        if rng.chance(0.5) {
            steps.append(.turn(calls))
        } else {
            steps += calls.map { .call($0) }
        }
        steps.append(.sync)
    }
}
