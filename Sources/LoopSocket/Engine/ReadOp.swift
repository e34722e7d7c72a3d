import FoundationEssentials
import Glibc

/// One queued read: what completes it, its tag and timeout, and the bytes gathered so far.
struct ReadOp {
    enum Kind {
        /// Whatever is available (at least one byte), up to `maxLength` when it is not 0.
        case available
        /// Exactly this many bytes.
        case length(Int)
        /// Up to and including the separator; fails the connection past `maxLength` when it is not 0.
        case separator(Data)
        /// Not a read: `startTLS`'s place in the read queue. Reads behind it wait for the handshake.
        case startTLS(TLSStart)
    }

    var kind: Kind
    var maxLength: Int
    var tag: Int
    /// Seconds; negative means none. Grows when the delegate extends it.
    var timeout: TimeInterval
    var id: UInt32
    /// ``scanned``, stored in the 4 bytes after `id` (an operation is 88 bytes instead of 96, and every
    /// socket object carries room for one, `ConnectionEngine.readSlot`). Clamped: past 4 GiB a search
    /// restarts earlier than it could, never later.
    var scannedStorage: UInt32 = 0
    /// Bytes gathered for a length or separator read that did not complete in one chunk.
    var buffer = Data()
    /// GCDAsyncSocket's `buffer:bufferOffset:` variants: receives the completed bytes.
    var intoBuffer: ((Data) -> Void)?
    /// An `async` read's continuation: it gets the outcome instead of the delegate. Resumed exactly once, on
    /// the loop, by whoever removes the operation from the queue (completion, failure, cancellation, close).
    var continuation: ReadContinuation?

    /// Where the next separator search starts in `buffer` (earlier positions were ruled out).
    var scanned: Int {
        get { Int(scannedStorage) }
        set { scannedStorage = UInt32(clamping: newValue) }
    }

    /// Whether this is `startTLS`'s marker rather than a read.
    var isStartTLS: Bool {
        if case .startTLS = kind { return true }
        return false
    }

    /// What feeding bytes to a read did.
    enum Outcome {
        /// `used` bytes were taken and the read wants more.
        case needMore(used: Int)
        /// The read completed with `data`, taking `used` bytes.
        case complete(used: Int, data: Data)
        /// A separator read hit its maxLength without finding the separator.
        case maxedOut
        /// The front is `startTLS`'s marker: no bytes go to the reads behind it until the handshake is done.
        case blocked
    }

    /// Takes what this read needs from `bytes`. Never calls out; the caller delivers the outcome.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        switch kind {
        case .available:
            let take = maxLength > 0 ? min(bytes.count, maxLength) : bytes.count
            return .complete(used: take, data: Self.copy(bytes, take))

        case .length(let length):
            let take = min(length - buffer.count, bytes.count)
            if buffer.isEmpty && take == length {
                return .complete(used: take, data: Self.copy(bytes, take))
            }
            if buffer.isEmpty && length <= 1 << 20 { buffer.reserveCapacity(length) }
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<take]))
            if buffer.count == length {
                let data = buffer
                buffer = Data()
                return .complete(used: take, data: data)
            }
            return .needMore(used: take)

        case .separator(let separator):
            return feedSeparated(bytes, separator: separator)

        case .startTLS:
            return .blocked
        }
    }

    private mutating func feedSeparated(_ bytes: UnsafeRawBufferPointer, separator: Data) -> Outcome {
        let limit = maxLength > 0 ? maxLength : Int.max
        let room = limit - buffer.count
        let take = min(bytes.count, room)
        let window = UnsafeRawBufferPointer(rebasing: bytes[0..<take])
        return separator.withUnsafeBytes { sep -> Outcome in
            if buffer.isEmpty {
                // Fast path: the whole message is in this chunk; search it in place, copy only the result.
                if let at = Self.find(sep, in: window, from: 0) {
                    let total = at + sep.count
                    return .complete(used: total, data: Self.copy(window, total))
                }
                buffer.append(contentsOf: window)
            } else {
                buffer.append(contentsOf: window)
                let found = buffer.withUnsafeBytes { all in Self.find(sep, in: all, from: scanned) }
                if let at = found {
                    let total = at + sep.count
                    let excess = buffer.count - total
                    let data = buffer.prefix(total)
                    buffer = Data()
                    return .complete(used: take - excess, data: Data(data))
                }
            }
            // Not found: a match can only start in the last separator-length-minus-one bytes.
            scanned = max(scanned, buffer.count - sep.count + 1)
            return buffer.count >= limit ? .maxedOut : .needMore(used: take)
        }
    }

    /// The first `count` bytes as `Data`, through `Data(bytes:count:)`: the generic sequence initialiser
    /// probes protocol conformances at run time, which showed up in profiles of the echo path.
    @inline(__always)
    static func copy(_ bytes: UnsafeRawBufferPointer, _ count: Int) -> Data {
        guard count > 0, let base = bytes.baseAddress else { return Data() }
        return Data(bytes: base, count: count)
    }

    /// The offset of the first `needle` in `haystack` at or after `start`.
    static func find(_ needle: UnsafeRawBufferPointer, in haystack: UnsafeRawBufferPointer, from start: Int) -> Int? {
        let n = needle.count
        guard n > 0, haystack.count - start >= n, let base = haystack.baseAddress, let first = needle.first else {
            return nil
        }
        var position = start
        let lastStart = haystack.count - n
        while position <= lastStart {
            guard let hit = memchr(base + position, Int32(first), lastStart - position + 1) else { return nil }
            let offset = base.distance(to: UnsafeRawPointer(hit))
            if n == 1 || memcmp(base + offset + 1, needle.baseAddress! + 1, n - 1) == 0 { return offset }
            position = offset + 1
        }
        return nil
    }

    /// How far along the read is: (bytes done, total or 0 when open-ended).
    var progress: (done: Int, total: Int) {
        switch kind {
        case .available: return (buffer.count, 0)
        case .length(let length): return (buffer.count, length)
        case .separator: return (buffer.count, maxLength)
        case .startTLS: return (0, 0)
        }
    }
}

/// One queued write.
struct WriteOp {
    var data: Data
    /// `data.count`, kept here: each `Data.count` goes through a runtime exclusivity check in Foundation's
    /// inlined code, and the write path asks for the length several times per operation.
    let count: Int
    var done: Int
    var tag: Int
    var timeout: TimeInterval
    var id: UInt32

    init(data: Data, count: Int, done: Int = 0, tag: Int, timeout: TimeInterval, id: UInt32) {
        self.data = data
        self.count = count
        self.done = done
        self.tag = tag
        self.timeout = timeout
        self.id = id
    }

    var remaining: Int { count - done }

    /// `startTLS`'s place in the write queue (no real write is empty): writes behind it go over TLS.
    var isStartTLS: Bool { count == 0 }
}

/// What an `async` read suspends on: stored in its ``ReadOp`` (no object per read).
typealias ReadContinuation = UnsafeContinuation<Data, any Error>
