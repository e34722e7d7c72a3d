import Foundation
import Glibc
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Broadcast and multicast across a real link, where GCDAsyncUdpSocket's users most often receive nothing
/// (CocoaAsyncSocket #609, #153, #169, #119): two network namespaces made by the test, joined by a veth
/// pair, with the group's two loops moved one into each (a socket belongs to the namespace of the thread
/// that creates it, and these sockets are created on their loop). Without the right to make namespaces
/// (not root, no `ip`), the same checks run over the loopback interface instead.
final class UDPNamespaceTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    /// The link the checks run over.
    private struct Link {
        let senderInterface: String
        let senderAddress: String
        let receiverInterface: String
        let receiverAddress: String
        let subnetBroadcast: String
        /// The IPv6 addresses, nil when the link has none apart from the loopback's.
        let senderAddress6: String?
    }

    private var namespaces: [String] = []

    override func tearDownWithError() throws {
        try super.tearDownWithError()
        for name in namespaces { _ = Self.ip(["netns", "del", name]) }
    }

    func testBroadcastAndMulticastCrossALink() throws {
        let link = try makeLink()
        try checkSubnetBroadcast(link)
        try checkLimitedBroadcast(link)
        try checkIPv4Multicast(link)
        if link.senderAddress6 != nil { try checkIPv6Multicast(link) }
    }

    // MARK: The checks

    /// A datagram to the subnet's broadcast address is refused without `enableBroadcast` and reaches a
    /// receiver bound to the wildcard address on the other side with it, from the sender's address.
    private func checkSubnetBroadcast(_ link: Link) throws {
        let (receiverDelegate, receiver) = try makeWildcardReceiver()
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate, loop: group.loops[0])
        sender.setIPv6Enabled(false)
        try sender.bind(toPort: 0, interface: link.senderAddress)
        sender.send(Data("denied".utf8), toHost: link.subnetBroadcast, port: receiver.localPort(), withTimeout: 5, tag: 1)
        delegate.waitForOutcomes(1)
        XCTAssertEqual(delegate.failedSends.first?.error?.errno, Errno(rawValue: EACCES))
        try sender.enableBroadcast(true)
        sender.send(Data("subnet".utf8), toHost: link.subnetBroadcast, port: receiver.localPort(), withTimeout: 5, tag: 2)
        receiverDelegate.waitForReceived(1)
        XCTAssertEqual(receiverDelegate.received, [Data("subnet".utf8)])
        XCTAssertEqual(receiverDelegate.receivedRecords.first.flatMap { GCDAsyncUdpSocket.host(fromAddress: $0.address) }, link.senderAddress)
    }

    /// 255.255.255.255 from a socket bound to an interface's address leaves by that interface (there is no
    /// route to it otherwise in the sender's namespace).
    private func checkLimitedBroadcast(_ link: Link) throws {
        let (receiverDelegate, receiver) = try makeWildcardReceiver()
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate, loop: group.loops[0])
        sender.setIPv6Enabled(false)
        try sender.bind(toPort: 0, interface: link.senderInterface)
        try sender.enableBroadcast(true)
        sender.send(Data("everyone".utf8), toHost: "255.255.255.255", port: receiver.localPort(), withTimeout: 5, tag: 1)
        receiverDelegate.waitForReceived(1)
        XCTAssertEqual(receiverDelegate.received, [Data("everyone".utf8)])
        delegate.waitForOutcomes(1)
        XCTAssertEqual(delegate.sentTags, [1])
    }

    /// A group joined on the receiver's interface by name gets what a sender sends out of its own interface
    /// (`sendIPv4MulticastOnInterface`), and stops getting it once it leaves.
    private func checkIPv4Multicast(_ link: Link) throws {
        let group4 = "239.255.79.1"
        let (receiverDelegate, receiver) = try makeWildcardReceiver()
        try receiver.joinMulticastGroup(group4, onInterface: link.receiverInterface)
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate, loop: group.loops[0])
        sender.setIPv6Enabled(false)
        try sender.sendIPv4Multicast(onInterface: link.senderInterface)
        sender.send(Data("group".utf8), toHost: group4, port: receiver.localPort(), withTimeout: 5, tag: 1)
        receiverDelegate.waitForReceived(1)
        XCTAssertEqual(receiverDelegate.received, [Data("group".utf8)])
        try receiver.leaveMulticastGroup(group4, onInterface: link.receiverInterface)
        sender.send(Data("gone".utf8), toHost: group4, port: receiver.localPort(), withTimeout: 5, tag: 2)
        sender.send(Data("direct".utf8), toHost: link.receiverAddress, port: receiver.localPort(), withTimeout: 5, tag: 3)
        receiverDelegate.waitForReceived(2)
        XCTAssertEqual(receiverDelegate.received, [Data("group".utf8), Data("direct".utf8)], "after leaving, only the direct datagram")
    }

    /// The same for an IPv6 group (site-local scope), joined and sent by interface name.
    private func checkIPv6Multicast(_ link: Link) throws {
        let group6 = "ff15::79"
        let receiverDelegate = UDPRecorder()
        let receiver = makeUDP(receiverDelegate, loop: group.loops[1])
        receiver.setIPv4Enabled(false)
        try receiver.bind(toPort: 0)
        try receiver.joinMulticastGroup(group6, onInterface: link.receiverInterface)
        try receiver.beginReceiving()
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate, loop: group.loops[0])
        sender.setIPv4Enabled(false)
        try sender.sendIPv6Multicast(onInterface: link.senderInterface)
        sender.send(Data("group6".utf8), toHost: group6, port: receiver.localPort(), withTimeout: 5, tag: 1)
        delegate.waitForOutcomes(1)
        XCTAssertEqual(delegate.sentTags, [1], "\(delegate.events)")
        receiverDelegate.waitForReceived(1)
        XCTAssertEqual(receiverDelegate.received, [Data("group6".utf8)])
    }

    /// An IPv4 socket on the receiving loop bound to the wildcard address (so broadcasts reach it), receiving.
    private func makeWildcardReceiver() throws -> (UDPRecorder, GCDAsyncUdpSocket) {
        let delegate = UDPRecorder()
        let receiver = makeUDP(delegate, loop: group.loops[1])
        receiver.setIPv6Enabled(false)
        try receiver.bind(toPort: 0)
        try receiver.beginReceiving()
        return (delegate, receiver)
    }

    // MARK: The namespaces

    /// Two namespaces joined by a veth pair, loop 0 in the first and loop 1 in the second; or the loopback.
    private func makeLink() throws -> Link {
        let tag = "\(getpid() % 100_000)"
        let (a, b, va, vb) = ("lsu-a-\(tag)", "lsu-b-\(tag)", "lsua\(tag)", "lsub\(tag)")
        guard TestTool.find("ip") != nil, Self.ip(["netns", "add", a]) else {
            print("UDPNamespaceTests: cannot make network namespaces here; the checks run over the loopback")
            return Link(senderInterface: "lo", senderAddress: "127.0.0.1", receiverInterface: "lo", receiverAddress: "127.0.0.1",
                        subnetBroadcast: "127.255.255.255", senderAddress6: nil)
        }
        namespaces = [a]
        XCTAssertTrue(Self.ip(["netns", "add", b]))
        namespaces.append(b)
        // No duplicate address detection: the IPv6 addresses are usable at once, not "tentative" for a second.
        for name in [a, b] {
            XCTAssertTrue(Self.ip(["netns", "exec", name, "sysctl", "-q", "-w", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"]))
        }
        let commands: [[String]] = [
            ["link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b],
            ["-n", a, "addr", "add", "10.79.0.1/24", "broadcast", "10.79.0.255", "dev", va],
            ["-n", b, "addr", "add", "10.79.0.2/24", "broadcast", "10.79.0.255", "dev", vb],
            ["-n", a, "addr", "add", "fd79::1/64", "dev", va, "nodad"],
            ["-n", b, "addr", "add", "fd79::2/64", "dev", vb, "nodad"],
            ["-n", a, "link", "set", va, "up"], ["-n", b, "link", "set", vb, "up"],
            ["-n", a, "link", "set", "lo", "up"], ["-n", b, "link", "set", "lo", "up"],
        ]
        for command in commands {
            XCTAssertTrue(Self.ip(command), "ip \(command.joined(separator: " "))")
        }
        // IPv6 runs on a link once the kernel has seen its carrier and configured it (its link-local address
        // appears then); a multicast datagram sent before is dropped. Polled, bounded.
        let deadline = Date().addingTimeInterval(10)
        while !(Self.hasLinkLocalAddress(a, va) && Self.hasLinkLocalAddress(b, vb)), Date() < deadline {
            usleep(10_000)
        }
        XCTAssertTrue(Self.hasLinkLocalAddress(a, va) && Self.hasLinkLocalAddress(b, vb), "IPv6 did not come up on the veth pair")
        try enter(a, on: group.loops[0])
        try enter(b, on: group.loops[1])
        return Link(senderInterface: va, senderAddress: "10.79.0.1", receiverInterface: vb, receiverAddress: "10.79.0.2",
                    subnetBroadcast: "10.79.0.255", senderAddress6: "fd79::1")
    }

    /// Moves `loop`'s thread into the named namespace (`setns`, which Glibc's Swift module leaves out, so it is
    /// looked up with `dlsym`).
    private func enter(_ namespace: String, on loop: EventLoop) throws {
        typealias SetNS = @convention(c) (Int32, Int32) -> Int32
        let symbol = try XCTUnwrap(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns"), "setns")
        let setns = unsafeBitCast(symbol, to: SetNS.self)
        let fd = open("/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0, "open /run/netns/\(namespace)")
        defer { close(fd) }
        let result = try onLoop(loop) { setns(fd, 0x4000_0000) == 0 ? 0 : errno }  // CLONE_NEWNET
        XCTAssertEqual(result, 0, "setns into \(namespace) failed")
    }

    private static func hasLinkLocalAddress(_ namespace: String, _ interface: String) -> Bool {
        ip(["-n", namespace, "-6", "addr", "show", "dev", interface, "scope", "link"], outputContains: "fe80:")
    }

    /// Runs `ip` (at most 10 s; with `posix_spawn`, not Foundation's `Process`, whose monitoring thread keeps
    /// descriptors of its own that this suite would count as leaked): whether it succeeded and, if asked, said
    /// `outputContains` on its standard output.
    private static func ip(_ arguments: [String], outputContains needle: String? = nil) -> Bool {
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else { return false }
        _ = fcntl(pipeEnds[0], F_SETFD, FD_CLOEXEC)  // the child keeps only the write end, as its stdout
        defer { close(pipeEnds[0]) }
        guard let executable = TestTool.find("ip") else {
            close(pipeEnds[1])
            return false
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = (["ip"] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(pipeEnds[1])
        guard spawned == 0 else { return false }
        var output = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(10)
        var descriptor = pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)
        while Date() < deadline, poll(&descriptor, 1, 100) >= 0 {
            guard descriptor.revents != 0 else { continue }
            let count = read(pipeEnds[0], &chunk, chunk.count)
            if count <= 0 { break }
            output += chunk[0..<count]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard Date() < deadline else {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                return false
            }
            usleep(1_000)  // polling the child's exit, bounded by the deadline
        }
        guard status == 0 else { return false }
        return needle.map { String(decoding: output, as: UTF8.self).contains($0) } ?? true
    }
}
