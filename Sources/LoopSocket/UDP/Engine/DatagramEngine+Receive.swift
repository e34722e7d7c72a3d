import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Receiving: `recvmmsg` batches into the loop's scratch slots, one `Data` per delivered datagram.
extension DatagramEngine {
    /// Starts receiving once or continuously (the event `receiveAsked`). Loop only.
    func startReceiving(_ mode: DatagramState.ReceiveMode) throws(DatagramError) {
        switch state.handle(.receiveAsked(mode, hasDescriptor: hasChannels)) {
        case .refuse(let refusal):
            throw .refused(refusal)
        case .startReceiving:
            if !held.isEmpty { requestPump() }
            updateInterest()
        default:
            return  // already receiving so
        }
    }

    /// Stops receiving (the event `pauseAsked`). Loop only.
    func stopReceiving() {
        if case .stopReceiving = state.handle(.pauseAsked) { updateInterest() }
    }

    /// Sets (or, with nil, removes) the receive filter. Loop only.
    func installReceiveFilter(_ filter: FilterSlot<ReceiveFilter>?) {
        receiveFilter = filter
    }

    // MARK: Readiness

    /// Whether the descriptors should be read now.
    var wantsReceive: Bool {
        guard held.isEmpty else { return false }
        if state.receiving == .continuous {
            // A slow delegate or filter queue: wait for it (see `deliveriesInFlight`).
            return pendingFilterOperations < Self.maxDeliveriesInFlight
                && deliveriesInFlight.load(ordering: .relaxed) < Self.maxDeliveriesInFlight
        }
        return state.receiving == .once && pendingFilterOperations == 0
    }

    /// Sets each descriptor's epoll interest: readable while receiving, writable while a send waits for room.
    func updateInterest() {
        var interest: IOEvents = []
        if wantsReceive { interest.insert(.readable) }
        if state.sendWait == .writable { interest.insert(.writable) }
        for channel in [channel4, channel6] {
            guard let channel, channel.interest != interest else { continue }
            do {
                try eventLoop.setInterest(interest, fd: channel.fd)
                channel.interest = interest
            } catch {
                closeWithError(.loop(error))
                return
            }
        }
    }

    func handleIO(_ events: IOEvents, on channel: DatagramChannel) {
        if events.contains(.writable), case .pump = state.handle(.sendWaitEnded(.writable)) {
            pump()
        }
        guard channel === channel4 || channel === channel6 else { return }  // closed by a callback
        if events.contains(.readable) || events.contains(.error) {
            if wantsReceive {
                receive(on: channel)
            } else if events.contains(.error) {
                // An ICMP error is pending while nobody receives: take it (level-triggered EPOLLERR would
                // otherwise spin the loop) and report it.
                reportPendingError(on: channel)
            }
        }
    }

    private func reportPendingError(on channel: DatagramChannel) {
        guard let code = try? Syscall.option(channel.fd, level: SOL_SOCKET, name: SO_ERROR), code != 0 else { return }
        sinkReport(.didNotReceive(.systemCall(SyscallError(.recvmmsg, errno: Errno(rawValue: code)))))
    }

    // MARK: Receiving a batch

    /// Takes up to a batch of datagrams with one `recvmmsg` (one while receiving once) and delivers them.
    private func receive(on channel: DatagramChannel) {
        let configuration = loopConfiguration
        let scratch = context.datagrams
        let limit = Swift.min(channel.family == AF_INET ? Int(configuration.maxReceive4) : Int(configuration.maxReceive6),
                              DatagramScratch.slotSize)
        let batch = state.receiving == .once ? 1 : configuration.receiveBatch
        scratch.prepareReceive(count: batch, limit: limit, coalescing: channel.coalesces)
        let generation = self.generation
        let outcome = Result { () throws(SyscallError) in try Syscall.receiveMessages(channel.fd, scratch.receiveMessages, count: batch) }
        // Sends the callbacks queue leave together, in the pump that follows the batch.
        let wasPumping = pumpState.hold()
        switch outcome {
        case .success(.wouldBlock):
            break
        case .success(.processed(let count)):
            countReceived(count, scratch: scratch)
            deliverBatch(count, scratch: scratch, limit: limit, generation: generation)
        case .failure(let error) where Self.isTransient(error.errno):
            sinkReport(.didNotReceive(.systemCall(error)))
        case .failure(let error):
            closeWithError(.systemCall(error))
        }
        pumpState.release(wasPumping)
        guard generation == self.generation else { return pumpAfterClose() }
        if !sends.isEmpty || pumpState.contains(.again) { pump() } else { updateInterest() }
    }

    /// Counts the `count` messages received into `scratch` (``SocketCounts``): with GRO a message holds a
    /// run of datagrams of its segment size.
    private func countReceived(_ count: Int, scratch: DatagramScratch) {
        var datagrams = 0
        var bytes = 0
        for i in 0..<count {
            let length = scratch.receivedBytes(i).count
            let segment = scratch.receivedSegmentSize(i)
            bytes += length
            datagrams += segment > 0 ? Swift.max(1, (length + segment - 1) / segment) : 1
        }
        eventLoop.countSocket(CEPOLL_DATAGRAMS_IN, datagrams)
        eventLoop.countSocket(CEPOLL_DATAGRAM_BYTES_IN, bytes)
    }

    /// Errors `recvmmsg` reports for one datagram or an earlier ICMP message, after which the socket works on.
    private static func isTransient(_ errno: Errno) -> Bool {
        switch errno.rawValue {
        case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ECONNRESET, EHOSTDOWN, ENETDOWN, EPROTO, ENOMEM, ENOBUFS: return true
        default: return false
        }
    }

    /// Delivers the `count` messages received into `scratch`, each one datagram or (with GRO) a run of
    /// datagrams of the message's segment size, split back here. A callback that pauses receiving leaves
    /// the rest held, in order.
    private func deliverBatch(_ count: Int, scratch: DatagramScratch, limit: Int, generation: UInt32) {
        var holding = false
        for i in 0..<count {
            let bytes = scratch.receivedBytes(i)
            let segment = scratch.receivedSegmentSize(i)
            if segment > 0 { coalescedMessagesReceived &+= 1 }
            let truncated = scratch.receivedTruncated(i)
            var offset = 0
            repeat {  // once for a zero-length datagram
                let length = segment > 0 ? Swift.min(segment, bytes.count - offset) : bytes.count
                let datagram = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
                offset += length
                guard generation == self.generation else { return }
                if !holding && !state.isReceiving { holding = true }
                if truncated || length > limit {
                    if !holding {
                        sinkReport(.didNotReceive(.datagramTooLong(limit: limit)))
                    }
                } else if holding {
                    // Paused by a callback mid-batch: keep the rest for when receiving resumes.
                    held.append(ReceivedDatagram(data: Self.copy(datagram), address: scratch.receivedSender(i)))
                } else {
                    deliver(Self.copy(datagram), from: scratch.receivedSender(i))
                }
            } while offset < bytes.count
        }
    }

    /// The one copy a received datagram costs: out of the reused slot into the `Data` the user keeps.
    @inline(__always)
    private static func copy(_ bytes: UnsafeRawBufferPointer) -> Data {
        Data(bytes: bytes.baseAddress!, count: bytes.count)
    }

    /// Delivers datagrams held back when receiving paused mid-batch (from the pump).
    func deliverHeld(_ generation: UInt32) {
        while !held.isEmpty && state.isReceiving && generation == self.generation {
            let datagram = held.removeFirst()
            deliver(datagram.data, from: datagram.address)
        }
    }

    /// Runs the receive filter if there is one, then hands the datagram to the delegate.
    private func deliver(_ data: Data, from address: Data) {
        guard let filter = receiveFilter else {
            complete(data, from: address, context: nil)
            return
        }
        guard let queue = filter.queue else {
            var context: AnyObject?
            if filter.block(data, address, &context) { complete(data, from: address, context: context) }
            return
        }
        pendingFilterOperations += 1
        let generation = self.generation
        let block = UncheckedSendable(filter.block)
        queue.async { [self] in
            var context: AnyObject?
            let allowed = block.value(data, address, &context)
            // The datagram travels with the verdict, so that the body captures only `self`.
            onLoop(ifStill: generation, passing: allowed ? UncheckedSendable((data, address, context)) : nil) { [self] accepted in
                pendingFilterOperations -= 1
                if case let (data, address, context)? = accepted?.value { complete(data, from: address, context: context) }
                updateInterest()
            }
        }
    }

    @inline(__always)
    private func complete(_ data: Data, from address: Data, context: Any?) {
        _ = state.handle(.delivered)  // a single receive ends: the interest is set after the batch or the pump
        sinkDidReceive(data, from: address, context: context)
    }
}
