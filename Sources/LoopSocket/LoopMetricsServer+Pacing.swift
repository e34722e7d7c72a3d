import FoundationEssentials

/// The metrics endpoint's response budget: a token bucket of `rate` tokens a second holding at most `rate`
/// (nginx's `limit_req` with `burst` equal to the rate). Each response takes a token.
struct ResponseBudget {
    private let rate: Double
    private var tokens: Double
    private var refilledAt: ContinuousClock.Instant

    /// A full bucket.
    init(perSecond rate: Int, now: ContinuousClock.Instant) {
        self.rate = Double(rate)
        tokens = Double(rate)
        refilledAt = now
    }

    /// Takes a token if there is one.
    mutating func take(now: ContinuousClock.Instant) -> Bool {
        refill(now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// How long until the next token (zero if one is there).
    mutating func wait(now: ContinuousClock.Instant) -> Duration {
        refill(now)
        return tokens >= 1 ? .zero : .nanoseconds(Int64(((1 - tokens) / rate * 1e9).rounded(.up)))
    }

    private mutating func refill(_ now: ContinuousClock.Instant) {
        guard now > refilledAt else { return }
        let elapsed = (now - refilledAt).metricsServerSeconds
        tokens = min(rate, tokens + elapsed * rate)
        refilledAt = now
    }
}

/// The last page rendered and when: served again while it is younger than the reuse interval or was
/// rendered in the loop's current turn (its published iteration count), so that however many requests a
/// turn answers, it renders one page at most.
struct PageCache {
    private var body = Data()
    private var renderedAt: ContinuousClock.Instant?
    private var turn: UInt64 = 0

    /// The page, if it may be served again at `now` in loop turn `turn`.
    func page(now: ContinuousClock.Instant, turn: UInt64, reuseInterval: Duration) -> Data? {
        guard let renderedAt else { return nil }
        return turn == self.turn || now - renderedAt < reuseInterval ? body : nil
    }

    /// Keeps `body`, rendered at `now` in turn `turn`.
    mutating func store(_ body: Data, now: ContinuousClock.Instant, turn: UInt64) {
        self.body = body
        renderedAt = now
        self.turn = turn
    }
}
