/// A callback that held its loop longer than the loop's stall threshold (see
/// `EventLoop.init(name:maxEventsPerWait:stallThreshold:)`), delivered to ``LoopDiagnostics``.
///
/// It is reported once the callback has returned, with what it was: an I/O handler (by its type), a task or
/// timer (by where it was queued, `#fileID:#line`, recorded at `execute` or `schedule` while the detector is
/// on), or a Swift concurrency job.
public struct StallReport: Sendable, CustomStringConvertible {
    /// What kind of callback held the loop.
    public enum Kind: String, Sendable {
        /// A registered descriptor's handler, for one readiness event (and the loop's own work it queued
        /// ran separately, each piece reported on its own).
        case ioHandler = "I/O handler"
        /// A closure queued with `execute`.
        case task
        /// A Swift concurrency job (a task's or an actor's).
        case job = "Swift concurrency job"
        /// A timer's closure.
        case timer
    }

    /// The loop's name.
    public var loop: String
    /// What kind of callback it was.
    public var kind: Kind
    /// The handler's type, or where the task or timer was queued (`File.swift:42`); `nil` when unknown.
    public var subject: String?
    /// How long the callback ran.
    public var duration: Duration
    /// The loop's threshold, which `duration` reached.
    public var threshold: Duration

    /// One line: the loop, the callback, how long it ran.
    public var description: String { "event loop '\(loop)': \(summary)" }

    /// The callback and how long it ran, without the loop's name.
    public var summary: String {
        let what = subject.map { kind == .ioHandler ? "\(kind.rawValue) \($0)" : "\(kind.rawValue) queued at \($0)" } ?? kind.rawValue
        return "\(what) held the loop for \(Self.milliseconds(duration)) (threshold \(Self.milliseconds(threshold)))"
    }

    /// A duration as milliseconds with one decimal, "212.4 ms".
    static func milliseconds(_ d: Duration) -> String {
        let tenths = (d.nanoseconds + 50_000) / 100_000
        return "\(tenths / 10).\(tenths % 10) ms"
    }
}

/// Where a task or timer was queued: `#fileID` and `#line`, recorded only while the stall detector is on.
struct CallSite: Sendable, CustomStringConvertible {
    let file: StaticString
    let line: UInt

    var description: String { "\(file):\(line)" }
}
