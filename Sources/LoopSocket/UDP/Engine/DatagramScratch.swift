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
    /// One `UDP_GRO` cmsg buffer per receive message.
    let receiveControls: UnsafeMutableRawPointer
    /// Send messages; with segmentation offload one message carries a run of datagrams.
    let sendMessages: UnsafeMutablePointer<cepoll_mmsghdr>
    /// One iovec and one address per datagram of a send batch.
    let sendIovecs: UnsafeMutablePointer<iovec>
    let sendAddresses: UnsafeMutablePointer<sockaddr_storage>
    let sendNameLengths: UnsafeMutablePointer<socklen_t>
    /// One `UDP_SEGMENT` cmsg buffer per send message.
    let sendControls: UnsafeMutableRawPointer
    /// The send batch being planned: see ``beginSend()``.
    @exclusivity(unchecked) private var plan = SendPlan()
    /// The `Data` each recent sender was delivered as (see ``DatagramAddressCache``).
    let senders = DatagramAddressCache()

    init() {
        let count = Self.maxBatch
        receiveMessages = .allocate(capacity: count)
        receiveIovecs = .allocate(capacity: count)
        receiveAddresses = .allocate(capacity: count)
        guard let slots = malloc(count * Self.slotSize) else { fatalError("LoopSocket: out of memory for UDP receive slots") }
        receiveSlots = slots
        receiveControls = .allocate(byteCount: count * Self.controlSpace, alignment: 8)
        sendMessages = .allocate(capacity: count)
        sendIovecs = .allocate(capacity: count)
        sendAddresses = .allocate(capacity: count)
        sendNameLengths = .allocate(capacity: count)
        sendControls = .allocate(byteCount: count * Self.controlSpace, alignment: 8)
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
        receiveControls.deallocate()
        sendMessages.deallocate()
        sendIovecs.deallocate()
        sendAddresses.deallocate()
        sendNameLengths.deallocate()
        sendControls.deallocate()
    }

    /// Readies the first `count` receive messages for a `recvmmsg` of datagrams up to `limit` bytes. With
    /// `coalescing` (the socket has `UDP_GRO` on) each message gets a whole slot and a cmsg buffer, since
    /// the kernel may put a run of datagrams into one; the limit is then checked per datagram.
    func prepareReceive(count: Int, limit: Int, coalescing: Bool) {
        for i in 0..<count {
            receiveIovecs[i].iov_len = coalescing ? Self.slotSize : limit
            withUnsafeMutablePointer(to: &receiveMessages[i].msg_hdr) { header in
                header.pointee.msg_name = UnsafeMutableRawPointer(receiveAddresses + i)
                header.pointee.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                header.pointee.msg_iov = receiveIovecs + i
                header.pointee.msg_iovlen = 1
                header.pointee.msg_control = coalescing ? receiveControls + i * Self.controlSpace : nil
                header.pointee.msg_controllen = coalescing ? Self.controlSpace : 0
                header.pointee.msg_flags = 0
            }
        }
    }

    /// The size of each datagram coalesced into received message `i` (the last may be shorter); 0 when the
    /// message is one datagram.
    @inline(__always)
    func receivedSegmentSize(_ i: Int) -> Int {
        // The kernel sets msg_controllen to what it wrote: 0 for a message that is one datagram.
        guard receiveMessages[i].msg_hdr.msg_controllen != 0 else { return 0 }
        return withUnsafePointer(to: &receiveMessages[i].msg_hdr) { Int(cepoll_udp_gro_segment($0)) }
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

    // MARK: Planning a send batch

    /// Control bytes per message (`CEPOLL_UDP_CONTROL_SPACE`).
    static let controlSpace = 32
    /// The most datagrams one segmented message carries (the kernel's `UDP_MAX_SEGMENTS` before 6.x).
    static let maxSegments = 64
    /// The most payload one segmented message carries: one IPv4 datagram's worth (65,535 less the headers).
    static let maxSegmentedBytes = 65_507

    /// The messages of the batch being planned and the run the last one carries.
    private struct SendPlan {
        var messages = 0
        /// The first datagram of the last message, its datagram count and payload bytes.
        var first = 0
        var count = 0
        var bytes = 0
        /// The size of the last message's datagrams; a shorter one closes the run (only the last may be).
        var segment = 0
        var open = false
    }

    /// Starts planning a batch: ``addSend(_:_:to:segmenting:)`` for datagrams 0, 1, … in order, then
    /// ``finishSend()``.
    @inline(__always)
    func beginSend() {
        plan = SendPlan()
    }

    /// Adds datagram `i` (`bytes`, to `destination`, nil on a connected socket) to the batch. With
    /// `segmenting` it joins the previous message when that carries a run of the same size to the same
    /// address (UDP GSO: the kernel cuts the message back into datagrams); otherwise it is a message of its own.
    @inline(__always)
    func addSend(_ i: Int, _ bytes: UnsafeRawBufferPointer, to destination: SocketAddress?, segmenting: Bool) {
        sendIovecs[i] = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        var nameLength: socklen_t = 0
        if let destination { nameLength = destination.fill(&sendAddresses[i]) }
        sendNameLengths[i] = nameLength
        if segmenting && joinsRun(i, size: bytes.count) {
            plan.count += 1
            plan.bytes += bytes.count
            plan.open = bytes.count == plan.segment
            sendMessages[plan.messages - 1].msg_hdr.msg_iovlen = plan.count
            return
        }
        let m = plan.messages
        plan.messages += 1
        plan.first = i
        plan.count = 1
        plan.bytes = bytes.count
        plan.segment = bytes.count
        plan.open = bytes.count > 0
        withUnsafeMutablePointer(to: &sendMessages[m].msg_hdr) { header in
            header.pointee.msg_name = nameLength == 0 ? nil : UnsafeMutableRawPointer(sendAddresses + i)
            header.pointee.msg_namelen = nameLength
            header.pointee.msg_iov = sendIovecs + i
            header.pointee.msg_iovlen = 1
            header.pointee.msg_control = nil
            header.pointee.msg_controllen = 0
            header.pointee.msg_flags = 0
        }
    }

    /// Whether datagram `i` (already in `sendIovecs`/`sendAddresses`) can join the last message's run.
    @inline(__always)
    private func joinsRun(_ i: Int, size: Int) -> Bool {
        guard plan.messages > 0, plan.open, size > 0, size <= plan.segment, plan.count < Self.maxSegments,
              plan.bytes + size <= Self.maxSegmentedBytes, sendNameLengths[i] == sendNameLengths[plan.first] else {
            return false
        }
        // Compared as words (an IPv4 address is 16 bytes, IPv6 28): cheaper than a call to memcmp.
        let length = Int(sendNameLengths[i])
        let a = UnsafeRawPointer(sendAddresses + i), b = UnsafeRawPointer(sendAddresses + plan.first)
        var offset = 0
        while offset + 8 <= length {
            guard a.load(fromByteOffset: offset, as: UInt64.self) == b.load(fromByteOffset: offset, as: UInt64.self) else { return false }
            offset += 8
        }
        while offset < length {
            guard a.load(fromByteOffset: offset, as: UInt8.self) == b.load(fromByteOffset: offset, as: UInt8.self) else { return false }
            offset += 1
        }
        return true
    }

    /// Ends the plan: gives each message carrying a run its `UDP_SEGMENT` cmsg; returns the message count.
    @inline(__always)
    func finishSend() -> Int {
        for m in 0..<plan.messages where sendMessages[m].msg_hdr.msg_iovlen > 1 {
            let segment = sendMessages[m].msg_hdr.msg_iov[0].iov_len
            withUnsafeMutablePointer(to: &sendMessages[m].msg_hdr) { header in
                cepoll_set_udp_segment(header, sendControls + m * Self.controlSpace, UInt16(segment))
            }
        }
        return plan.messages
    }

    /// The datagrams carried by the first `messages` messages of the batch.
    @inline(__always)
    func datagrams(inFirst messages: Int) -> Int {
        var total = 0
        for m in 0..<messages { total += sendMessages[m].msg_hdr.msg_iovlen }
        return total
    }

    /// Whether send message `m` carries a run (was sent with `UDP_SEGMENT`).
    @inline(__always)
    func isSegmented(_ m: Int) -> Bool {
        sendMessages[m].msg_hdr.msg_iovlen > 1
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
