import Foundation

/// One random case of ``UDPModelTests``: how the socket is set up and the steps it takes, all from one seed.
struct UDPModelScript {
    struct Setup: CustomStringConvertible {
        var ipv6: Bool
        /// Callbacks on a delegate queue rather than inline on the loop.
        var queued: Bool
        /// The socket is connected to the peer (sends take no address; an address is refused).
        var connected: Bool
        /// `maxSendBufferSize`: a longer datagram fails at once.
        var maxSend: Int

        var description: String {
            "\(ipv6 ? "IPv6" : "IPv4"), \(queued ? "delegate queue" : "inline delegate"), \(connected ? "connected" : "unconnected"), maxSend \(maxSend)"
        }
    }

    /// How a send names its destination.
    enum Destination: String {
        case address, host, connected
    }

    struct Send: CustomStringConvertible {
        var tag: Int
        var size: Int
        var destination: Destination
        /// Seconds; negative for none. Loopback never makes a send wait, so none expires.
        var timeout: TimeInterval

        var description: String { "\(tag):\(size)B→\(destination.rawValue)" + (timeout >= 0 ? "/\(timeout)s" : "") }
    }

    /// Where a filter runs.
    enum FilterPlace: String {
        case inline, queue
    }

    enum Step: CustomStringConvertible {
        /// The socket sends these, from the test's thread.
        case send([Send])
        /// The peer sends these datagram ids, in this order: the logical sequence after the peer dropped,
        /// duplicated and reordered some.
        case peerSends([Int])
        case receiveOnce
        case beginReceiving
        case pauseReceiving
        /// Drop datagrams with an odd id (nil: remove the filter).
        case receiveFilter(FilterPlace?)
        /// Drop sends whose tag is a multiple of 3, reporting them as sent (nil: remove the filter).
        case sendFilter(FilterPlace?)
        /// On the loop, in one turn: these sends, then `close()` (they fail with `closedError`).
        case closeWithQueuedSends([Send])
        /// On the loop, in one turn: these sends, then `closeAfterSending()` (they leave, then the close).
        case closeAfterSending([Send])

        var description: String {
            switch self {
            case .send(let sends): return "send \(sends)"
            case .peerSends(let ids): return "peer sends \(ids)"
            case .receiveOnce: return "receiveOnce"
            case .beginReceiving: return "beginReceiving"
            case .pauseReceiving: return "pauseReceiving"
            case .receiveFilter(let place): return "receive filter \(place?.rawValue ?? "off")"
            case .sendFilter(let place): return "send filter \(place?.rawValue ?? "off")"
            case .closeWithQueuedSends(let sends): return "close with queued \(sends)"
            case .closeAfterSending(let sends): return "closeAfterSending after \(sends)"
            }
        }
    }

    let seed: UInt64
    let setup: Setup
    let steps: [Step]

    init(seed: UInt64) {
        self.seed = seed
        var random = SeededGenerator(seed: seed)
        let setup = Setup(ipv6: random.chance(0.5), queued: random.chance(0.5), connected: random.chance(0.4),
                          maxSend: random.chance(0.3) ? 600 : 65_535)
        self.setup = setup
        var steps: [Step] = []
        var nextTag = 1
        var nextID = 0
        func sends(_ count: Int) -> [Send] {
            (0..<count).map { _ in
                defer { nextTag += 1 }
                let destination: Destination
                if random.chance(0.1) {
                    destination = setup.connected ? .address : .connected  // the wrong kind: refused
                } else if setup.connected {
                    destination = .connected
                } else {
                    destination = random.chance(0.5) ? .address : .host
                }
                let timeout: TimeInterval = [-1, 0.5, 5][random.int(0...2)]
                return Send(tag: nextTag, size: random.size(max: 1200), destination: destination, timeout: timeout)
            }
        }
        for _ in 0..<random.int(3...14) {
            switch random.int(0...9) {
            case 0, 1: steps.append(.send(sends(random.int(1...6))))
            case 2, 3, 4:
                var ids = (0..<random.int(1...6)).map { _ in defer { nextID += 1 }; return nextID }
                ids = ids.flatMap { id -> [Int] in random.chance(0.15) ? [] : random.chance(0.2) ? [id, id] : [id] }
                for i in ids.indices.dropFirst() where random.chance(0.25) { ids.swapAt(i - 1, i) }
                steps.append(.peerSends(ids))
            case 5: steps.append(.receiveOnce)
            case 6: steps.append(random.chance(0.7) ? .beginReceiving : .pauseReceiving)
            case 7: steps.append(.receiveFilter(random.chance(0.3) ? nil : random.chance(0.5) ? .inline : .queue))
            case 8: steps.append(.sendFilter(random.chance(0.3) ? nil : random.chance(0.5) ? .inline : .queue))
            default: steps.append(random.chance(0.5) ? .receiveOnce : .beginReceiving)
            }
        }
        switch random.int(0...2) {
        case 0: steps.append(.closeWithQueuedSends(sends(random.int(1...4))))
        case 1: steps.append(.closeAfterSending(sends(random.int(0...4))))
        default: break  // a plain close() ends the case
        }
        self.steps = steps
    }

    /// A datagram's bytes: its id in the first two bytes (the receive filter reads it), then filler.
    static func payload(id: Int, size: Int) -> Data {
        var data = Data([UInt8(truncatingIfNeeded: id >> 8), UInt8(truncatingIfNeeded: id)])
        data.append(contentsOf: (0..<max(0, size - 2)).map { UInt8(truncatingIfNeeded: id &* 31 &+ $0) })
        return data
    }

    /// The id a payload carries.
    static func id(of data: Data) -> Int {
        data.count < 2 ? -1 : Int(data[data.startIndex]) << 8 | Int(data[data.startIndex + 1])
    }

    /// The size the peer's datagram `id` has (fixed per id, so a duplicate is the same datagram).
    static func peerSize(_ id: Int) -> Int {
        2 + (id &* 7919) % 900
    }
}
