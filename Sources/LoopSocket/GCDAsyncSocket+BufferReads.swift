// The only file that imports full Foundation: GCDAsyncSocket's buffer variants take an `NSMutableData`.
// Nothing on the hot path goes through here.
import Foundation

/// GCDAsyncSocket's reads into a caller's buffer.
///
/// The completed bytes are written into `buffer` at `offset` (its length becomes `offset` plus the bytes
/// read) and the same bytes are delivered to `socket(_:didRead:withTag:)`. Unlike GCDAsyncSocket, the
/// delivered `Data` is a copy, not a no-copy view into the buffer: Swift's `Data` is a value. An offset past
/// the end of the buffer makes the read a no-op, as there.
extension GCDAsyncSocket {
    /// Reads available bytes into `buffer` at `offset`.
    public func readData(withTimeout timeout: TimeInterval, buffer: NSMutableData?, bufferOffset offset: UInt, tag: Int) {
        readData(withTimeout: timeout, buffer: buffer, bufferOffset: offset, maxLength: 0, tag: tag)
    }

    /// Reads at most `length` available bytes (0: no cap) into `buffer` at `offset`.
    public func readData(withTimeout timeout: TimeInterval, buffer: NSMutableData?, bufferOffset offset: UInt, maxLength length: UInt, tag: Int) {
        guard let intoBuffer = Self.bufferWriter(buffer, offset) else { return }
        queueRead(.available, maxLength: Int(clamping: length), timeout: timeout, tag: tag, intoBuffer: intoBuffer)
    }

    /// Reads exactly `length` bytes into `buffer` at `offset`.
    public func readData(toLength length: UInt, withTimeout timeout: TimeInterval, buffer: NSMutableData?, bufferOffset offset: UInt, tag: Int) {
        guard length > 0, length <= UInt(Int.max), let intoBuffer = Self.bufferWriter(buffer, offset) else { return }
        queueRead(.length(Int(length)), maxLength: 0, timeout: timeout, tag: tag, intoBuffer: intoBuffer)
    }

    /// Reads up to and including the separator `data` into `buffer` at `offset`.
    public func readData(to data: Data, withTimeout timeout: TimeInterval, buffer: NSMutableData?, bufferOffset offset: UInt, tag: Int) {
        readData(to: data, withTimeout: timeout, buffer: buffer, bufferOffset: offset, maxLength: 0, tag: tag)
    }

    /// Reads up to and including the separator, at most `length` bytes (0: no cap), into `buffer` at `offset`.
    public func readData(to data: Data, withTimeout timeout: TimeInterval, buffer: NSMutableData?, bufferOffset offset: UInt, maxLength length: UInt, tag: Int) {
        guard !data.isEmpty, length == 0 || length >= UInt(data.count), length <= UInt(Int.max),
              let intoBuffer = Self.bufferWriter(buffer, offset) else { return }
        queueRead(.separator(data), maxLength: Int(length), timeout: timeout, tag: tag, intoBuffer: intoBuffer)
    }

    /// The closure that stores completed bytes into the caller's buffer; `nil` if the offset is past its end.
    private static func bufferWriter(_ buffer: NSMutableData?, _ offset: UInt) -> ((Data) -> Void)? {
        guard let buffer else { return { _ in } }
        guard offset <= UInt(buffer.length) else { return nil }
        let start = Int(offset)
        return { data in
            buffer.length = start
            buffer.append(data)
        }
    }
}
