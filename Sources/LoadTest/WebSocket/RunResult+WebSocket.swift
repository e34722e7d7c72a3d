extension RunResult {
    /// ws mode: the workload, and what the figures common to every mode do not say.
    package struct WebSocket: Codable, Sendable, Equatable {
        /// `echo`, `heartbeat` or `receive`.
        package var workload: String
        /// Heartbeats: the interval between one connection's pings, seconds.
        package var pingIntervalSeconds: Double?
        /// Receive only: messages of the window that carried no send time (counted in ``RunResult/requests``,
        /// not timed).
        package var untimedMessages: UInt64 = 0
        /// Close frames the server sent, by status code (`none` for a close without one), over the whole run.
        package var serverCloses: [String: UInt64] = [:]

        enum CodingKeys: String, CodingKey {
            case workload, pingIntervalSeconds = "ping_interval_s", untimedMessages = "untimed_messages"
            case serverCloses = "server_closes"
        }

        /// Nothing counted yet, for a run with `settings`.
        init(_ settings: WebSocketSettings) {
            switch settings.workload {
            case .echo: workload = "echo"
            case .heartbeat(let interval):
                workload = "heartbeat"
                pingIntervalSeconds = interval
            case .receive: workload = "receive"
            }
        }

        /// Adds another loop's (or run's) counts; a different workload makes it `mixed`.
        package mutating func add(_ other: WebSocket) {
            if workload != other.workload { workload = "mixed" }
            if pingIntervalSeconds != other.pingIntervalSeconds { pingIntervalSeconds = nil }
            untimedMessages &+= other.untimedMessages
            serverCloses.merge(other.serverCloses, uniquingKeysWith: &+)
        }
    }
}
