import FoundationEssentials
import Glibc
import XCTest

@testable import LoopSocket

/// The per-loop cache of sender `Data`: whatever lands in which slot, the `Data` handed out is the sender's bytes.
final class DatagramAddressCacheTests: XCTestCase {
    private func ipv4(_ address: UInt32, port: UInt16) -> Data {
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        sin.sin_addr.s_addr = address.bigEndian
        return withUnsafeBytes(of: &sin) { Data($0) }
    }

    private func ipv6(_ last: UInt8, port: UInt16) -> Data {
        var sin6 = sockaddr_in6()
        sin6.sin6_family = sa_family_t(AF_INET6)
        sin6.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &sin6.sin6_addr) { $0[15] = last }
        return withUnsafeBytes(of: &sin6) { Data($0) }
    }

    func testEverySenderGetsItsOwnBytesAcrossCollisions() {
        let cache = DatagramAddressCache()
        // Four times the slot count of distinct senders, twice over: collisions and evictions happen.
        var senders: [Data] = []
        for i in 0..<(DatagramAddressCache.slotCount * 2) {
            senders.append(ipv4(0x7F00_0001 &+ UInt32(i % 7), port: UInt16(1_024 + i % 60_000)))
            senders.append(ipv6(UInt8(i % 251), port: UInt16(2_048 + i % 50_000)))
        }
        for _ in 0..<2 {
            for sender in senders {
                let delivered = sender.withUnsafeBytes { cache.data(for: $0) }
                XCTAssertEqual(delivered, sender)
            }
        }
    }

    func testARepeatedSenderIsServedFromTheCache() {
        let cache = DatagramAddressCache()
        let sender = ipv4(0x7F00_0001, port: 4_000)
        let first = sender.withUnsafeBytes { cache.data(for: $0) }
        let second = sender.withUnsafeBytes { cache.data(for: $0) }
        XCTAssertEqual(first, sender)
        let sameStorage = first.withUnsafeBytes { a in second.withUnsafeBytes { b in a.baseAddress == b.baseAddress } }
        XCTAssertTrue(sameStorage, "the second delivery shares the first one's storage")
    }

    /// A thousand flows from one host (ephemeral ports, as a load generator's sockets get): nearly every
    /// datagram after a sender's first finds its entry. In a direct-mapped table of the same size, the one in
    /// five senders whose slot another active sender shares evict each other on every datagram.
    func testAThousandActiveSendersAreServedFromTheCache() {
        let cache = DatagramAddressCache()
        var ports = Set<UInt16>()
        var x: UInt32 = 12_345
        while ports.count < 1_000 {
            x = x &* 1_103_515_245 &+ 12_345
            ports.insert(UInt16(32_768 + (x >> 1) % 28_232))
        }
        let senders = ports.sorted().map { ipv4(0x7F00_0001, port: $0) }
        func storage(_ data: Data) -> UnsafeRawPointer? { data.withUnsafeBytes { $0.baseAddress } }
        var previous = senders.map { sender in sender.withUnsafeBytes { cache.data(for: $0) } }
        var hits = 0
        for _ in 0..<3 {
            for (i, sender) in senders.enumerated() {
                let delivered = sender.withUnsafeBytes { cache.data(for: $0) }
                XCTAssertEqual(delivered, sender)
                if storage(delivered) == storage(previous[i]) { hits += 1 }
                previous[i] = delivered
            }
        }
        XCTAssertGreaterThanOrEqual(hits, 3 * senders.count * 99 / 100, "cache hits of \(3 * senders.count) lookups")
    }

    func testAddressesLongerThanTheKeyAreCopiedNotCached() {
        let cache = DatagramAddressCache()
        var un = sockaddr_un()
        un.sun_family = sa_family_t(AF_UNIX)
        let long = withUnsafeBytes(of: &un) { Data($0) }
        XCTAssertEqual(long.withUnsafeBytes { cache.data(for: $0) }, long)
    }

    func testSocketAddressParsesRawIPv4AndIPv6InPlace() throws {
        let v4 = try XCTUnwrap(SocketAddress(bytes: ipv4(0x7F00_0001, port: 4_321)))
        XCTAssertEqual(v4.port, 4_321)
        let v6 = try XCTUnwrap(SocketAddress(bytes: ipv6(1, port: 1_234)))
        XCTAssertEqual(v6.port, 1_234)
        // Too short for its family: rejected or read as storage, never read past the end.
        XCTAssertNil(SocketAddress(bytes: Data([0])))
        XCTAssertNil(SocketAddress(bytes: ipv4(0x7F00_0001, port: 1).prefix(8)))
    }
}
