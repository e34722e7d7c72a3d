/// The stall detector: with a threshold set, the loop times every callback (two clock readings each) and
/// reports those that held it longer to ``LoopDiagnostics``. Off (the default) it costs one test per batch
/// of events, tasks or timers, and one per `execute` or `schedule`; nothing is recorded.
extension EventLoop {
    /// Wraps `task` so that it records where it was queued as it runs, when the detector is on.
    @inline(__always)
    func traced(_ task: @escaping @Sendable () -> Void, file: StaticString, line: UInt) -> @Sendable () -> Void {
        guard stallThresholdNanoseconds != 0 else { return task }
        let site = CallSite(file: file, line: line)
        return { [unowned self] in
            currentCallSite = site
            task()
        }
    }

    /// ``traced(_:file:line:)`` for closures that never leave the loop's thread.
    @inline(__always)
    func tracedOnLoop(_ task: @escaping () -> Void, file: StaticString, line: UInt) -> () -> Void {
        guard stallThresholdNanoseconds != 0 else { return task }
        let site = CallSite(file: file, line: line)
        return { [unowned self] in
            currentCallSite = site
            task()
        }
    }

    /// Runs `batch`, timing each piece of work.
    func runTimed(_ batch: [LoopWork]) {
        for work in batch {
            currentCallSite = nil
            let start = Deadline.now().uptimeNanoseconds
            work.run(on: self)
            switch work {
            case .task: checkStall(since: start, .task, subject: currentCallSite?.description)
            case .job, .taskJob: checkStall(since: start, .job, subject: nil)
            }
        }
    }

    /// Fires the ready timers, timing each.
    func runTimersTimed() {
        while let task = timers.popReady() {
            counters.timers &+= 1
            currentCallSite = nil
            let start = Deadline.now().uptimeNanoseconds
            task.run()
            checkStall(since: start, .timer, subject: currentCallSite?.description)
        }
    }

    /// Reports a stall if the callback that began at `start` ran at least the threshold.
    @inline(__always)
    func checkStall(since start: UInt64, _ kind: StallReport.Kind, subject: @autoclosure () -> String?) {
        let elapsed = Deadline.now().uptimeNanoseconds &- start
        guard elapsed >= stallThresholdNanoseconds else { return }
        reportStall(StallReport(loop: name, kind: kind, subject: subject(),
                                duration: .nanoseconds(Int64(clamping: elapsed)),
                                threshold: .nanoseconds(Int64(clamping: stallThresholdNanoseconds))))
    }

    @inline(never)
    private func reportStall(_ report: StallReport) {
        counters.stalls &+= 1
        LoopDiagnostics.report(LoopDiagnostic(category: .stall, loop: name, message: report.summary, stall: report))
    }

    /// The type of the handler the user registered (not the box it is called through). `object` must be
    /// alive (the loop's dispatch keeps it so until the stall is checked).
    static func typeName(of handler: (type: any LoopIOHandler.Type, object: UnsafeMutableRawPointer)) -> String {
        if handler.type == IOEventHandlerBox.self {
            let box = Unmanaged<IOEventHandlerBox>.fromOpaque(handler.object).takeUnretainedValue()
            return String(reflecting: type(of: box.handler))
        }
        return String(reflecting: handler.type)
    }
}
