// The task's cancellation record, added and removed around one suspension without the executor switches
// of the toolchain's `withTaskCancellationHandler`.

/// Runs `operation` with `handler` registered as the current task's cancellation handler, with the
/// semantics of `withTaskCancellationHandler` (the handler runs at once if the task is already cancelled,
/// at most once, possibly concurrently with `operation`), but without leaving the caller's executor.
///
/// Why: in Swift 6.2 and 6.3, `withTaskCancellationHandler(operation:onCancel:isolation:)` is a library
/// function with an `isolated` parameter and a nonisolated `operation` closure, so every call switches
/// executors three times (into it, into the closure, back to the caller). A `swift_task_switch` of a task
/// that prefers a task executor looks the preference up under the task's status lock; with a read per
/// round trip, the async echo server made 4 switches per round trip instead of 2, and spent 8,300 instead
/// of 7,230 user-space instructions per round trip (callgrind). The runtime entry points used here are the
/// ones that function calls (and that the `nonisolated(nonsending)` form of later toolchains inlines into
/// every client); they are declared, with what each does and the toolchain it was checked against, in
/// TaskRuntime.swift. Once the toolchain's own `withTaskCancellationHandler` is `nonisolated(nonsending)`,
/// this function and those two declarations can go.
@inline(__always) nonisolated(nonsending) func withCancellationHandler<T>(
    _ operation: nonisolated(nonsending) () async throws -> T, onCancel handler: @Sendable () -> Void
) async throws -> T {
    let record = swiftTaskAddCancellationHandler(handler)
    defer { swiftTaskRemoveCancellationHandler(record) }
    return try await operation()
}
