import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// `EventLoop.metrics`: counters count what ran, utilisation tells a busy loop from an idle one, late work
/// shows as lag. Every wait is bounded and signalled by the loop; no test sleeps to synchronise.
final class LoopMetricsTests: LoopTestCase {
    override class var loopName: String { "metrics-loop" }

    /// Spins on the calling thread for `duration` (a busy loop, not a sleep: the thread stays runnable).
    private static func spin(for duration: Duration) {
        let end = Deadline.now() + duration
        while Deadline.now() < end {}
    }

    func testCountersCountWhatRan() throws {
        let loop = self.loop
        try settle()
        let before = loop.metrics
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<10 { try loop.execute { done.signal() } }
        for _ in 0..<10 { try done.waitOrThrow("ten tasks") }
        try loop.execute {
            let due = Deadline.now()
            for _ in 0..<3 { _ = try? loop.schedule(at: due) { done.signal() } }
        }
        for _ in 0..<3 { try done.waitOrThrow("three timers") }
        let pipe = try makePipe()
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in
                _ = readAvailable(pipe.read)
                done.signal()
            })
        }
        writeBytes(pipe.write)
        try done.waitOrThrow("a readable event")
        try settle()
        let window = loop.metrics.since(before)
        // The ten tasks, the one that scheduled the timers, the registration and the first settling task;
        // the second settling task may or may not be published yet, and neither may the second settling
        // task before `before` was read (then it counts in this window).
        XCTAssertTrue((13...15).contains(window.tasks), "tasks: \(window.tasks)")
        XCTAssertEqual(window.timers, 3)
        XCTAssertGreaterThanOrEqual(window.events, 1)
        XCTAssertGreaterThan(window.iterations, 0)
        XCTAssertEqual(window.registeredDescriptors, 1)
        XCTAssertEqual(window.stalls, 0, "the detector is off")
        try onLoop(loop) { try loop.close(fd: pipe.read) }
        close(pipe.write)
    }

    func testBusyLoopReportsUtilisationNearOne() throws {
        try settle()
        let before = loop.metrics
        _ = try onLoop(loop) { Self.spin(for: .milliseconds(300)) }
        let window = loop.metrics.since(before)
        XCTAssertGreaterThan(window.busyNanoseconds, 290_000_000)
        XCTAssertGreaterThan(window.utilisation, 0.8, "busy \(window.busyNanoseconds) ns, waiting \(window.waitNanoseconds) ns")
    }

    func testIdleLoopReportsUtilisationNearZero() throws {
        try settle()
        let before = loop.metrics
        // Nothing to do for 300 ms but wait for one timer: the loop sleeps in epoll_wait.
        let fired = DispatchSemaphore(value: 0)
        try loop.schedule(after: .milliseconds(300)) { fired.signal() }
        try fired.waitOrThrow("a timer 300 ms away")
        let window = loop.metrics.since(before)
        XCTAssertGreaterThan(window.waitNanoseconds, 250_000_000)
        XCTAssertLessThan(window.utilisation, 0.1, "busy \(window.busyNanoseconds) ns, waiting \(window.waitNanoseconds) ns")
    }

    func testTimerHeldUpByABusyLoopShowsAsLag() throws {
        let loop = self.loop
        try settle()
        let before = loop.metrics
        let fired = DispatchSemaphore(value: 0)
        try loop.execute {
            _ = try? loop.schedule(after: .milliseconds(5)) { fired.signal() }
            Self.spin(for: .milliseconds(60))  // the timer is due 55 ms before the loop can get to it
        }
        try fired.waitOrThrow("the held-up timer")
        try settle()
        let lag = loop.metrics.since(before).lag
        XCTAssertGreaterThanOrEqual(lag.count, 1)
        XCTAssertGreaterThanOrEqual(lag.maxNanoseconds, 50_000_000, "lag \(lag.maximum)")
        XCTAssertGreaterThanOrEqual(lag.percentile(1), .milliseconds(50))
    }

    func testTaskQueuedBehindABusyTaskShowsAsLag() throws {
        let loop = self.loop
        try settle()
        let before = loop.metrics
        let started = DispatchSemaphore(value: 0)
        let queued = Locked(false)
        let ran = DispatchSemaphore(value: 0)
        try loop.execute {
            started.signal()
            // Spin until the test has queued its task, then 50 ms more: that task waits at least 50 ms.
            while !queued.value {}
            Self.spin(for: .milliseconds(50))
        }
        try started.waitOrThrow("the busy task")
        try loop.execute { ran.signal() }
        queued.value = true
        try ran.waitOrThrow("the task queued behind it")
        try settle()
        let lag = loop.metrics.since(before).lag
        XCTAssertGreaterThanOrEqual(lag.maxNanoseconds, 50_000_000, "lag \(lag.maximum)")
    }

    func testMetricsAreReadableWhileTheLoopIsBusy() throws {
        let loop = self.loop
        let started = DispatchSemaphore(value: 0)
        let release = Locked(false)
        try loop.execute {
            started.signal()
            while !release.value {}
        }
        try started.waitOrThrow("the busy task")
        // The loop is inside a task: reading must not wait for it, and shows the time as busy.
        let first = loop.metrics
        Self.spin(for: .milliseconds(20))
        let second = loop.metrics
        release.value = true
        XCTAssertGreaterThanOrEqual(second.since(first).busyNanoseconds, 19_000_000)
        XCTAssertEqual(second.since(first).waitNanoseconds, 0)
    }

    func testGroupMetricsSumItsLoops() throws {
        let group = try EventLoopGroup(numberOfLoops: 2, name: "metrics-group")
        defer { try? group.shutdownGracefully() }
        for loop in group.loops {
            _ = try onLoop(loop) {}
            _ = try onLoop(loop) {}  // runs after the first one's iteration was published
        }
        let each = group.loops.map(\.metrics)
        let total = group.metrics
        XCTAssertEqual(total.loop, "metrics-group")
        XCTAssertGreaterThanOrEqual(total.iterations, each.map(\.iterations).reduce(0, +))
        XCTAssertGreaterThanOrEqual(total.tasks, 2)
    }

    // MARK: The histogram

    func testLagBucketsAreContiguousAndNarrow() {
        var previous = LagHistogram.lowerBound(ofBucket: 0)
        XCTAssertEqual(previous, 0)
        for index in 1..<LagHistogram.bucketCount {
            let lower = LagHistogram.lowerBound(ofBucket: index)
            XCTAssertGreaterThan(lower, previous)
            XCTAssertEqual(LagHistogram.bucket(of: lower), index)
            XCTAssertEqual(LagHistogram.bucket(of: lower - 1), index - 1)
            // At most 12.5% of the bucket's lowest value wide (the first eight hold one value each).
            if index > 8 { XCTAssertLessThanOrEqual(Double(lower - previous), Double(previous) * 0.125 + 1) }
            previous = lower
        }
        XCTAssertEqual(LagHistogram.bucket(of: .max), LagHistogram.bucketCount - 1)
    }

    func testPercentilesFollowTheSamples() {
        var h = LagHistogram()
        for ms in 1...100 as ClosedRange<UInt64> {
            let ns = ms * 1_000_000
            h.buckets[LagHistogram.bucket(of: ns)] += 1
            h.count += 1
            h.sumNanoseconds += ns
            h.maxNanoseconds = max(h.maxNanoseconds, ns)
        }
        for (q, ms) in [(0.5, 50.0), (0.9, 90.0), (0.99, 99.0)] {
            let p = Double(h.percentileNanoseconds(q)) / 1e6
            XCTAssertGreaterThanOrEqual(p, ms, "p\(q)")
            XCTAssertLessThanOrEqual(p, ms * 1.13, "p\(q)")
        }
        XCTAssertEqual(h.percentileNanoseconds(1), 100_000_000)
        XCTAssertEqual(LagHistogram().percentileNanoseconds(0.5), 0)
    }

    // MARK: Prometheus

    func testPrometheusTextHasEverySeries() {
        var m = LoopMetrics(loop: "metrics-loop")
        m.lag.buckets[LagHistogram.bucket(of: 2_000_000)] += 1
        m.lag.count += 1
        m.lag.sumNanoseconds += 2_000_000
        let text = LoopMetrics.prometheusText([m])
        for name in ["epoll_loop_iterations_total", "epoll_loop_events_total", "epoll_loop_tasks_total",
                     "epoll_loop_timers_total", "epoll_loop_stalls_total", "epoll_loop_busy_seconds_total",
                     "epoll_loop_wait_seconds_total", "epoll_loop_registered_descriptors"] {
            XCTAssertTrue(text.contains("# TYPE \(name) "), name)
            XCTAssertTrue(text.contains("\(name){loop=\"metrics-loop\"} "), name)
        }
        XCTAssertTrue(text.contains("# TYPE epoll_loop_lag_seconds histogram"))
        XCTAssertTrue(text.contains("epoll_loop_lag_seconds_bucket{loop=\"metrics-loop\",le=\"+Inf\"} \(m.lag.count)"))
        // Cumulative buckets never decrease.
        let counts = text.split(separator: "\n").filter { $0.hasPrefix("epoll_loop_lag_seconds_bucket") }
            .compactMap { UInt64($0.split(separator: " ").last!) }
        XCTAssertEqual(counts.count, LoopMetrics.prometheusLagBounds.count + 1)
        XCTAssertEqual(counts, counts.sorted())
        // The one 2 ms sample is counted from the 2.5 ms bound on.
        let bounds = LoopMetrics.prometheusLagBounds + [.infinity]
        XCTAssertEqual(zip(bounds, counts).filter { $0.1 == 1 }.map(\.0).first, 0.0025)
    }

    // MARK: Socket counts

    func testSocketCountsSubtractCountersKeepGaugesAndSum() {
        var earlier = SocketCounts()
        earlier.stream.open = 3
        earlier.stream.accepted = 10
        earlier.stream.bytesReceived = 1_000
        earlier.datagram.datagramsSent = 4
        earlier.tlsHandshakes = 2
        var later = earlier
        later.stream.open = 1
        later.stream.accepted = 15
        later.stream.bytesReceived = 1_500
        later.datagram.datagramsSent = 9
        later.tlsHandshakes = 5
        later.tlsHandshakeFailures = 1
        let window = later.since(earlier)
        XCTAssertEqual(window.stream.open, 1, "a gauge stays the later value")
        XCTAssertEqual(window.stream.accepted, 5)
        XCTAssertEqual(window.stream.bytesReceived, 500)
        XCTAssertEqual(window.datagram.datagramsSent, 5)
        XCTAssertEqual(window.tlsHandshakes, 3)
        XCTAssertEqual(window.tlsHandshakeFailures, 1)

        var a = LoopMetrics(loop: "a"), b = LoopMetrics(loop: "b")
        a.sockets = earlier
        b.sockets = later
        let total = LoopMetrics.sum([a, b], name: "group").sockets
        XCTAssertEqual(total.stream.open, 4, "gauges add up over a group")
        XCTAssertEqual(total.stream.accepted, 25)
        XCTAssertEqual(total.datagram.datagramsSent, 13)
        XCTAssertEqual(total.tlsHandshakes, 7)
    }

    func testPrometheusTextHasTheSocketSeriesByKind() {
        var m = LoopMetrics(loop: "l")
        m.sockets.stream.open = 7
        m.sockets.stream.bytesSent = 123
        m.sockets.datagram.datagramsReceived = 5
        m.sockets.tlsHandshakeFailures = 2
        let text = LoopMetrics.prometheusText([m])
        XCTAssertTrue(text.contains("# TYPE epoll_loop_sockets_open gauge"))
        XCTAssertTrue(text.contains("epoll_loop_sockets_open{loop=\"l\",kind=\"stream\"} 7\n"), text)
        XCTAssertTrue(text.contains("epoll_loop_sockets_open{loop=\"l\",kind=\"datagram\"} 0\n"), text)
        XCTAssertTrue(text.contains("epoll_loop_socket_bytes_sent_total{loop=\"l\",kind=\"stream\"} 123\n"), text)
        XCTAssertTrue(text.contains("epoll_loop_datagrams_received_total{loop=\"l\"} 5\n"), text)
        XCTAssertTrue(text.contains("epoll_loop_tls_handshake_failures_total{loop=\"l\"} 2\n"), text)
        for name in ["epoll_loop_socket_bytes_received_total", "epoll_loop_connections_accepted_total",
                     "epoll_loop_connections_connected_total", "epoll_loop_datagrams_sent_total",
                     "epoll_loop_tls_handshakes_total"] {
            XCTAssertTrue(text.contains("# TYPE \(name) counter"), name)
        }
    }
}
