extension EventLoopGroup {
    /// The loops' metrics summed (see ``LoopMetrics/sum(_:name:)``), named after the group; any thread.
    public var metrics: LoopMetrics {
        LoopMetrics.sum(loops.map(\.metrics), name: name)
    }

    /// Every loop's metrics in Prometheus' text format, one series per loop (see
    /// ``LoopMetrics/prometheusText(_:)``): what a server's `GET /metrics` returns.
    public func prometheusText() -> String {
        LoopMetrics.prometheusText(loops.map(\.metrics))
    }
}
