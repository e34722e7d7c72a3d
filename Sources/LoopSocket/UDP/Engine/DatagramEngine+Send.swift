import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// The send queue: datagrams leave in order, in `sendmmsg` batches of consecutive datagrams that share a
/// descriptor; `EAGAIN` waits for EPOLLOUT, `ENOBUFS` for a short timer; a send times out only while it waits.
extension DatagramEngine {
    /// One queued datagram.
    struct SendOp {
        var data: Data
        var destination: Destination
        /// Monotonic ns after which the send fails with `sendTimeoutError` if still waiting; 0 for none.
        var deadline: UInt64
        var tag: Int
        var id: UInt32
        /// The send filter let it through (it is not asked twice when the send has to wait).
        var filtered = false
    }

    enum Destination {
        /// The connected peer (``send(_:withTimeout:tag:)``).
        case connected
        case address(SocketAddress)
        /// Several candidates (`"localhost"`): one is picked by family preference when the send leaves.
        case candidates([SocketAddress])
        /// A host name being resolved off the loop; the result lands in `resolutions[id]`.
        case resolving
        case invalid(DatagramError)

        var address: SocketAddress? {
            if case .address(let address) = self { return address }
            return nil
        }

        var isConnected: Bool {
            if case .connected = self { return true }
            return false
        }

        /// An address or the connected peer: nothing left to resolve or pick.
        var isSettled: Bool {
            switch self {
            case .connected, .address: return true
            case .candidates, .resolving, .invalid: return false
            }
        }
    }

    /// After `ENOBUFS` the kernel has room in the socket buffer (so no EPOLLOUT is coming) but not below it:
    /// retry after this long.
    static let noBufferRetryNanoseconds: UInt64 = 1_000_000

    /// Queues a send; false if it failed at once (too large, or the queue is full), which is then reported
    /// in the next loop iteration (or by a close before it, which stays the last event) without holding the data.
    func enqueueOnLoop(_ data: Data, _ destination: Destination, deadline: UInt64, tag: Int, resolve: (String, UInt16)?) -> Bool {
        let configuration = loopConfiguration
        var failure: DatagramError?
        if data.count > Int(configuration.maxSend) {
            failure = .datagramTooLarge(bytes: data.count, limit: Int(configuration.maxSend))
        } else if !sends.isEmpty && queuedSendBytes + data.count > configuration.maxQueuedSendBytes {
            failure = .sendQueueFull(queued: queuedSendBytes, limit: configuration.maxQueuedSendBytes)
        }
        if let failure {
            if failedAtOnce.isEmpty { eventLoop.executeOnLoop { [self] in reportFailedAtOnce() } }
            failedAtOnce.append((tag, failure))
            return false
        }
        nextSendID &+= 1
        let id = nextSendID
        sends.append(SendOp(data: data, destination: destination, deadline: deadline, tag: tag, id: id))
        queuedSendBytes += data.count
        if let (host, port) = resolve { startResolving(host, port: port, id: id) }
        return true
    }

    /// Reports the sends that failed at once since the last report.
    func reportFailedAtOnce() {
        guard !failedAtOnce.isEmpty else { return }
        let failed = failedAtOnce
        failedAtOnce.removeAll()
        for (tag, error) in failed { sinkReport(.didNotSend(tag: tag, error)) }
    }

    private func startResolving(_ host: String, port: UInt16, id: UInt32) {
        offLoop({ Resolver.resolve(host, port: port).mapError(DatagramError.unresolved) }) { [self] result in
            resolutions[id] = result
            pump()
        }
    }

    /// Sets (or, with nil, removes) the send filter. Loop only.
    func installSendFilter(_ filter: FilterSlot<SendFilter>?) {
        sendFilter = filter
    }

    // MARK: The pump

    /// Asks for a pump (``PumpState/request()``): the running one (or the received batch being delivered)
    /// goes round again, or one is deferred to the next iteration. Loop only.
    func requestPump() {
        if pumpState.request() == .deferPump { context.deferPump(self) }
    }

    /// Delivers held datagrams and sends what can leave now. Loop only; re-entrant calls (from callbacks)
    /// only ask it to go round again.
    func pump() {
        guard pumpState.begin() else { return }
        let generation = self.generation
        repeat {
            deliverHeld(generation)
            sendQueued(generation)
        } while generation == self.generation && pumpState.goAgain()
        pumpState.end()
        guard generation == self.generation else { return pumpAfterClose() }
        if case .close = state.handle(.pumpEnded(sendsQueued: !sends.isEmpty)) {
            closeWithError(nil)
            return
        }
        armSendTimer()
        updateInterest()
    }

    /// A callback closed the socket under a running pump, and may have bound it again and queued sends:
    /// those are pumped in the next iteration (the running pump stopped at the close).
    func pumpAfterClose() {
        if !sends.isEmpty { requestPump() }
    }

    private func sendQueued(_ generation: UInt32) {
        while !sends.isEmpty && state.canSend && generation == self.generation {
            switch prepareFront() {
            case .wait:
                return
            case .failed(let error):
                failFront(error)
            case .ready(let channel):
                if let filter = sendFilter {
                    if sends.front({ $0.filtered })! {
                        sendBatch(on: channel, limit: 1)
                    } else {
                        filterFront(filter, channel: channel)
                    }
                } else {
                    sendBatch(on: channel, limit: DatagramScratch.maxBatch)
                }
            }
        }
    }

    private enum FrontState {
        case ready(DatagramChannel)
        case wait
        case failed(DatagramError)
    }

    /// Settles the front send's destination (picks among candidates, takes a resolution) and checks it
    /// against the socket's state (GCDAsyncUdpSocket's `doPreSend`).
    private func prepareFront() -> FrontState {
        // The usual destinations (an address, the connected peer) are read in place: copying the enum out
        // and back costs an outlined copy and destroy per datagram.
        if !sends.front({ $0.destination.isSettled })! {
            if let state = settleFront() { return state }
        }
        let (isConnected, address) = sends.front { op in (op.destination.isConnected, op.destination.address) }!
        if state.isConnected {
            guard isConnected, let peerAddress, let channel = channel(to: peerAddress) else {
                return .failed(.destinationWhenConnected)
            }
            return .ready(channel)
        }
        guard let address else {
            return .failed(.noDestination)
        }
        do { try createChannelsIfNeeded() } catch { return .failed(error) }
        guard let channel = channel(to: address) else {
            return .failed(.noDescriptorToSend(ipv4: address.isIPv4))
        }
        return .ready(channel)
    }

    /// Settles a front send addressed by name or by candidates into one address (or an error; `.wait` while
    /// the name is being resolved); nil when it has been settled.
    private func settleFront() -> FrontState? {
        let (destination, id) = sends.front { ($0.destination, $0.id) }!
        let settled: Destination
        switch destination {
        case .invalid(let error):
            return .failed(error)
        case .resolving:
            guard let result = resolutions.removeValue(forKey: id) else { return .wait }
            switch result {
            case .failure(let error): return .failed(error)
            case .success(let addresses):
                do { settled = .address(try pickAddress(from: addresses)) } catch { return .failed(error) }
            }
        case .candidates(let addresses):
            do { settled = .address(try pickAddress(from: addresses)) } catch { return .failed(error) }
        case .connected, .address:
            return nil
        }
        sends.withFirst { $0.destination = settled }
        return nil
    }

    private func failFront(_ error: DatagramError) {
        let op = sends.removeFirst()
        queuedSendBytes -= op.data.count
        sinkReport(.didNotSend(tag: op.tag, error))
    }

    /// Sends the front datagram and those right behind it that leave from the same descriptor, in one
    /// `sendmmsg`, and reports them.
    private func sendBatch(on target: DatagramChannel, limit: Int) {
        var count = 1
        let connected = state.isConnected
        while count < Swift.min(limit, sends.count) {
            let joins = sends.at(count) { op -> Bool in
                switch op.destination {
                case .connected: return connected
                case .address(let address): return !connected && channel(to: address) === target
                default: return false
                }
            }
            guard joins else { break }
            count += 1
        }
        let scratch = context.datagrams
        let segmenting = count > 1 && target.canSegment && loopConfiguration.segmentationOffload
            && !state.segmentationRefused
        scratch.beginSend()
        let outcome = transmit(from: 0, count: count, scratch: scratch, fd: target.fd, segmenting: segmenting)
        _ = state.handle(.bound)  // the kernel bound it to an ephemeral port if it was not
        switch outcome {
        case .success(.processed(let sent)):
            countSent(sent)
            completeFront(sent)
        case .success(.wouldBlock):
            _ = state.handle(.sendWaits(.writable))  // the pump's end asks for EPOLLOUT
        case .failure(let error) where scratch.isSegmented(0) && Self.refusesSegmentation(error.errno):
            // The route cannot take GSO (no checksum offload, a segment above its MTU): nothing left, so
            // the same datagrams go again one per message, as they would have without offload.
            _ = state.handle(.segmentationRefused)
        case .failure(let error) where error.errno == .noBufferSpace:
            guard case .proceed = state.handle(.sendWaits(.noBuffers)) else { return }
            retryTimer = scheduleIfStillCurrent(at: Deadline.now().uptimeNanoseconds &+ Self.noBufferRetryNanoseconds) { [self] in
                retryTimer = .invalid
                if case .pump = state.handle(.sendWaitEnded(.noBuffers)) { pump() }
            }
        case .failure(let error):
            failFront(.systemCall(error))
        }
    }

    /// The errors with which the kernel refuses a `UDP_SEGMENT` message it would take as separate datagrams.
    private static func refusesSegmentation(_ errno: Errno) -> Bool {
        switch errno.rawValue {
        case EIO, EINVAL, EOPNOTSUPP, ENOPROTOOPT, EMSGSIZE: return true
        default: return false
        }
    }

    /// Plans datagrams `i`… of the batch into the scratch space (each `Data`'s bytes stay valid only inside
    /// its `withUnsafeBytes`, so the calls nest) and sends them; the count sent is in datagrams.
    private func transmit(from i: Int, count: Int, scratch: DatagramScratch, fd: Int32, segmenting: Bool) -> Result<IOResult<Int>, SyscallError> {
        if i == count {
            let messages = scratch.finishSend()
            let outcome = Result { () throws(SyscallError) in try Syscall.sendMessages(fd, scratch.sendMessages, count: messages) }
            guard case .success(.processed(let sent)) = outcome else { return outcome }
            if segmenting { segmentedMessagesSent &+= (0..<sent).count { scratch.isSegmented($0) } }
            return .success(.processed(scratch.datagrams(inFirst: sent)))
        }
        // Address and data are taken out first: calling `withUnsafeBytes` on the borrowed operation made the
        // compiler copy the whole operation (its destination enum included) per datagram.
        let (data, address) = sends.at(i) { ($0.data, $0.destination.address) }
        return data.withUnsafeBytes { bytes in
            scratch.addSend(i, bytes, to: address, segmenting: segmenting)
            return transmit(from: i + 1, count: count, scratch: scratch, fd: fd, segmenting: segmenting)
        }
    }

    /// Counts the first `count` sends as sent (``SocketCounts``), before they are dequeued.
    private func countSent(_ count: Int) {
        var bytes = 0
        for i in 0..<count { bytes += sends.at(i) { $0.data.count } }
        eventLoop.countSocket(CEPOLL_DATAGRAMS_OUT, count)
        eventLoop.countSocket(CEPOLL_DATAGRAM_BYTES_OUT, bytes)
    }

    /// The first `count` sends left: dequeue them, then report them (a callback may queue or close).
    private func completeFront(_ count: Int) {
        if count == 1 {
            let op = sends.removeFirst()
            queuedSendBytes -= op.data.count
            sinkDidSend(tag: op.tag)
            return
        }
        withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { tags in
            for i in 0..<count {
                let op = sends.removeFirst()
                queuedSendBytes -= op.data.count
                tags.initializeElement(at: i, to: op.tag)
            }
            for i in 0..<count { sinkDidSend(tag: tags[i]) }
        }
    }

    /// Runs the send filter on the front datagram, inline or on its queue, then sends or drops it.
    private func filterFront(_ filter: FilterSlot<SendFilter>, channel: DatagramChannel) {
        let (data, tag, destination) = sends.front { ($0.data, $0.tag, $0.destination) }!
        let address = (destination.address ?? peerAddress)?.data ?? Data()
        guard let queue = filter.queue else {
            if filter.block(data, address, tag) {
                sends.withFirst { $0.filtered = true }
                sendBatch(on: channel, limit: 1)
            } else {
                completeFront(1)
            }
            return
        }
        guard case .proceed = state.handle(.sendWaits(.filter)) else { return }
        let generation = self.generation
        let block = UncheckedSendable(filter.block)
        queue.async { [self] in
            onLoop(ifStill: generation, passing: block.value(data, address, tag)) { [self] allowed in
                guard case .pump = state.handle(.sendWaitEnded(.filter)) else { return }
                if allowed {
                    sends.withFirst { $0.filtered = true }
                } else {
                    completeFront(1)
                }
                pump()
            }
        }
    }

    // MARK: Timeouts

    /// While the queue waits for the socket, a timer for the front send's deadline.
    func armSendTimer() {
        if sendTimer != .invalid {
            eventLoop.cancelOnLoop(sendTimer)
            sendTimer = .invalid
        }
        guard state.sendWaitsForKernel, let deadline = sends.front({ $0.deadline }), deadline != 0 else {
            return
        }
        sendTimer = scheduleIfStillCurrent(at: deadline) { [self] in
            sendTimer = .invalid
            expireSends()
        }
    }

    private func expireSends() {
        let now = Deadline.now().uptimeNanoseconds
        let generation = self.generation
        while let deadline = sends.front({ $0.deadline }), deadline != 0, deadline <= now, generation == self.generation {
            failFront(.sendTimeout)
        }
        guard generation == self.generation else { return }
        pump()
    }
}
