extension LoopMetrics {
    /// The lag histogram's `le` bounds in seconds, 10 µs to 10 s: loop lag that matters starts around a
    /// millisecond, and anything past a second is an outage.
    public static let prometheusLagBounds: [Double] = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                                       0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// `loops` in Prometheus' text exposition format (0.0.4, which OpenMetrics scrapers read too): one
    /// series per loop, labelled `loop="<name>"`; append it to a server's own metrics page.
    ///
    /// Metrics: `epoll_loop_iterations_total`, `epoll_loop_events_total`, `epoll_loop_tasks_total`,
    /// `epoll_loop_timers_total`, `epoll_loop_stalls_total` (counters), `epoll_loop_busy_seconds_total`
    /// and `epoll_loop_wait_seconds_total` (counters: utilisation is `rate(busy) / (rate(busy) +
    /// rate(wait))`), `epoll_loop_registered_descriptors` (gauge) and `epoll_loop_lag_seconds` (histogram;
    /// a bucket's count is exact to the internal buckets' 12.5% precision around each bound). The sockets'
    /// counts (``SocketCounts``): `epoll_loop_sockets_open` (gauge), `epoll_loop_socket_bytes_received_total`
    /// and `epoll_loop_socket_bytes_sent_total`, labelled `kind="stream"` or `kind="datagram"`;
    /// `epoll_loop_connections_accepted_total`, `epoll_loop_connections_connected_total`,
    /// `epoll_loop_datagrams_received_total`, `epoll_loop_datagrams_sent_total`,
    /// `epoll_loop_tls_handshakes_total` and `epoll_loop_tls_handshake_failures_total` (counters).
    ///
    /// ```swift
    /// let page = LoopMetrics.prometheusText(group.loops.map(\.metrics))
    /// ```
    public static func prometheusText(_ loops: [LoopMetrics]) -> String {
        var s = ""
        func family(_ name: String, _ type: String, _ help: String, _ value: (LoopMetrics) -> String) {
            s += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for m in loops { s += "\(name){loop=\"\(escape(m.loop))\"} \(value(m))\n" }
        }
        family("epoll_loop_iterations_total", "counter", "Loop iterations completed.") { "\($0.iterations)" }
        family("epoll_loop_events_total", "counter", "Readiness events returned by epoll_wait.") { "\($0.events)" }
        family("epoll_loop_tasks_total", "counter", "Tasks and Swift concurrency jobs run.") { "\($0.tasks)" }
        family("epoll_loop_timers_total", "counter", "Timers fired.") { "\($0.timers)" }
        family("epoll_loop_stalls_total", "counter", "Callbacks that held the loop past the stall threshold.") { "\($0.stalls)" }
        family("epoll_loop_busy_seconds_total", "counter", "Time spent working (not waiting in epoll_wait).") {
            seconds($0.busyNanoseconds)
        }
        family("epoll_loop_wait_seconds_total", "counter", "Time spent waiting in a blocking epoll_wait.") {
            seconds($0.waitNanoseconds)
        }
        family("epoll_loop_registered_descriptors", "gauge", "Descriptors registered with the loop.") {
            "\($0.registeredDescriptors)"
        }
        func kinds(_ name: String, _ type: String, _ help: String, _ value: (SocketCounts.Kind) -> String) {
            s += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for m in loops {
                let label = "loop=\"\(escape(m.loop))\""
                s += "\(name){\(label),kind=\"stream\"} \(value(m.sockets.stream))\n"
                s += "\(name){\(label),kind=\"datagram\"} \(value(m.sockets.datagram))\n"
            }
        }
        kinds("epoll_loop_sockets_open", "gauge", "Connections (stream) and sockets (datagram) open.") { "\($0.open)" }
        kinds("epoll_loop_socket_bytes_received_total", "counter", "Bytes received, on the wire (TLS as ciphertext).") {
            "\($0.bytesReceived)"
        }
        kinds("epoll_loop_socket_bytes_sent_total", "counter", "Bytes sent, on the wire (TLS as ciphertext).") {
            "\($0.bytesSent)"
        }
        family("epoll_loop_connections_accepted_total", "counter", "Accepted stream connections run by the loop.") {
            "\($0.sockets.stream.accepted)"
        }
        family("epoll_loop_connections_connected_total", "counter", "Stream connections the loop's sockets connected.") {
            "\($0.sockets.stream.started)"
        }
        family("epoll_loop_datagrams_received_total", "counter", "Datagrams received.") { "\($0.sockets.datagram.datagramsReceived)" }
        family("epoll_loop_datagrams_sent_total", "counter", "Datagrams sent.") { "\($0.sockets.datagram.datagramsSent)" }
        family("epoll_loop_tls_handshakes_total", "counter", "TLS handshakes completed.") { "\($0.sockets.tlsHandshakes)" }
        family("epoll_loop_tls_handshake_failures_total", "counter", "TLS handshakes that failed.") {
            "\($0.sockets.tlsHandshakeFailures)"
        }
        let name = "epoll_loop_lag_seconds"
        s += "# HELP \(name) How late timers and tasks from other threads ran against when they were due.\n"
        s += "# TYPE \(name) histogram\n"
        for m in loops {
            let label = "loop=\"\(escape(m.loop))\""
            for bound in prometheusLagBounds {
                s += "\(name)_bucket{\(label),le=\"\(bound)\"} \(m.lag.count(atOrBelow: UInt64(bound * 1e9)))\n"
            }
            s += "\(name)_bucket{\(label),le=\"+Inf\"} \(m.lag.count)\n"
            s += "\(name)_sum{\(label)} \(seconds(m.lag.sumNanoseconds))\n"
            s += "\(name)_count{\(label)} \(m.lag.count)\n"
        }
        return s
    }

    /// Nanoseconds as seconds, in the exposition format's float syntax.
    private static func seconds(_ nanoseconds: UInt64) -> String {
        "\(Double(nanoseconds) / 1e9)"
    }

    /// A label value with `\`, `"` and newlines escaped, as the format requires.
    private static func escape(_ value: String) -> String {
        var out = ""
        for c in value {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }
}

extension LagHistogram {
    /// Samples in the buckets whose values all lie at or below `nanoseconds` (cumulative, for `le` buckets).
    func count(atOrBelow nanoseconds: UInt64) -> UInt64 {
        var total: UInt64 = 0
        for index in buckets.indices {
            let next = index + 1 < Self.bucketCount ? Self.lowerBound(ofBucket: index + 1) : UInt64.max
            guard next - 1 <= nanoseconds else { break }
            total &+= buckets[index]
        }
        return total
    }
}
