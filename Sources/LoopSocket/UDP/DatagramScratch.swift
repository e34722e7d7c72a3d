import CEpollShim
import EpollLoop
import FoundationEssentials
import Glibc

/// The memory every UDP socket of one loop receives into and sends from: `mmsghdr` arrays, iovecs, address
/// slots and, for receiving, one 64 KiB slot per message of a batch. Reused for every batch, so receiving
/// allocates nothing per datagram except the `Data` it delivers. Loop-confined; one per loop, made on first
/// use and kept in the loop's ``LoopContext``.
///
/// The receive slots are `malloc`ed and touched only as datagrams land in them: a loop that receives small
/// datagrams maps a page or two per slot, not the 4 MiB it reserves.
final class DatagramScratch {
    /// Messages per `recvmmsg`/`sendmmsg`: the largest batch a socket may ask for.
    static let maxBatch = 64
    /// Bytes per receive slot: the largest UDP payload (65,507 over IPv4) fits.
    static let slotSize = 65_536

    let receiveMessages: UnsafeMutablePointer<cepoll_mmsghdr>
    let receiveIovecs: UnsafeMutablePointer<iovec>
    let receiveAddresses: UnsafeMutablePointer<sockaddr_storage>
    let receiveSlots: UnsafeMutableRawPointer
    let sendMessages: UnsafeMutablePointer<cepoll_mmsghdr>
    let sendIovecs: UnsafeMutablePointer<iovec>
    let sendAddresses: UnsafeMutablePointer<sockaddr_storage>
    /// The `Data` each recent sender was delivered as (see ``DatagramAddressCache``).
    let senders = DatagramAddressCache()

    init() {
        let count = Self.maxBatch
        receiveMessages = .allocate(capacity: count)
        receiveIovecs = .allocate(capacity: count)
        receiveAddresses = .allocate(capacity: count)
        guard let slots = malloc(count * Self.slotSize) else { fatalError("LoopSocket: out of memory for UDP receive slots") }
        receiveSlots = slots
        sendMessages = .allocate(capacity: count)
        sendIovecs = .allocate(capacity: count)
        sendAddresses = .allocate(capacity: count)
        for i in 0..<count {
            receiveIovecs[i] = iovec(iov_base: slots + i * Self.slotSize, iov_len: Self.slotSize)
            receiveMessages[i] = cepoll_mmsghdr()
            sendMessages[i] = cepoll_mmsghdr()
        }
    }

    deinit {
        receiveMessages.deallocate()
        receiveIovecs.deallocate()
        receiveAddresses.deallocate()
        free(receiveSlots)
        sendMessages.deallocate()
        sendIovecs.deallocate()
        sendAddresses.deallocate()
    }

    /// Readies the first `count` receive messages for a `recvmmsg` of datagrams up to `limit` bytes.
    func prepareReceive(count: Int, limit: Int) {
        for i in 0..<count {
            receiveIovecs[i].iov_len = limit
            withUnsafeMutablePointer(to: &receiveMessages[i].msg_hdr) { header in
                header.pointee.msg_name = UnsafeMutableRawPointer(receiveAddresses + i)
                header.pointee.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                header.pointee.msg_iov = receiveIovecs + i
                header.pointee.msg_iovlen = 1
                header.pointee.msg_control = nil
                header.pointee.msg_controllen = 0
                header.pointee.msg_flags = 0
            }
        }
    }

    /// The payload of received message `i`.
    @inline(__always)
    func receivedBytes(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: receiveSlots + i * Self.slotSize, count: Int(receiveMessages[i].msg_len))
    }

    /// Whether received message `i` was cut to the buffer (`MSG_TRUNC`).
    @inline(__always)
    func receivedTruncated(_ i: Int) -> Bool {
        receiveMessages[i].msg_hdr.msg_flags & CEPOLL_MSG_TRUNC != 0
    }

    /// The sender of received message `i`, as raw `sockaddr` bytes.
    @inline(__always)
    func receivedAddress(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: receiveAddresses + i, count: Int(receiveMessages[i].msg_hdr.msg_namelen))
    }

    /// The sender of received message `i` as the `Data` delivered to the delegate (shared with earlier
    /// datagrams from the same sender).
    @inline(__always)
    func receivedSender(_ i: Int) -> Data {
        senders.data(for: receivedAddress(i))
    }

    /// Sets send message `i` to `bytes`, to `destination` (nil on a connected socket).
    @inline(__always)
    func prepareSend(_ i: Int, _ bytes: UnsafeRawBufferPointer, to destination: SocketAddress?) {
        sendIovecs[i] = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        var nameLength: socklen_t = 0
        if let destination { nameLength = destination.fill(&sendAddresses[i]) }
        withUnsafeMutablePointer(to: &sendMessages[i].msg_hdr) { header in
            header.pointee.msg_name = nameLength == 0 ? nil : UnsafeMutableRawPointer(sendAddresses + i)
            header.pointee.msg_namelen = nameLength
            header.pointee.msg_iov = sendIovecs + i
            header.pointee.msg_iovlen = 1
            header.pointee.msg_control = nil
            header.pointee.msg_controllen = 0
            header.pointee.msg_flags = 0
        }
    }
}

extension LoopContext {
    /// The loop's datagram scratch space. Loop only.
    var datagrams: DatagramScratch {
        if let datagramScratch { return datagramScratch }
        let scratch = DatagramScratch()
        datagramScratch = scratch
        return scratch
    }
}
