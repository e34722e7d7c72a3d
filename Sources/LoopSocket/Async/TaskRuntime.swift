// Every entry point of the Swift concurrency runtime that LoopSocket calls directly, and nothing else. They
// are the runtime's own, not API: the standard library declares them `internal` (or underscored), and a
// toolchain may change them without notice. Keeping them in this one file makes that surface one page to
// re-check, and Tests/LoopSocketTests/Async/TaskRuntimeTests.swift holds each to the behaviour relied on
// here, naming the entry point in its failure, and checks that the running runtime still exports it.
//
// Swift reserves the runtime's `swift_` symbol names: a direct `@_silgen_name("swift_task_…")` draws a
// warning from the compiler (Swift 6.3.1: "reserved for the Swift runtime … this will become an error"). So
// each is reached through a one-line forwarder in CEpollShim (CEpollShim.c, "Swift concurrency runtime"),
// `cepoll_task_…`, which calls the runtime entry point with the same arguments under the Swift calling
// convention; the declarations below name the forwarders.
//
// Checked against Swift 6.3.1 (Linux, x86_64): the runtime's declarations in the toolchain's
// `_Concurrency` interface (x86_64-unknown-linux-gnu.private.swiftinterface), which spells each signature
// exactly as below, the symbols `libswift_Concurrency.so` exports, and TaskRuntimeTests.

/// `swift_task_addCancellationHandler(handler, context) -> CancellationNotificationStatusRecord *`: allocates
/// a cancellation record on the current task's allocator, adds it to the task's status records and returns
/// it. If the task is already cancelled the handler runs at once, before this returns; otherwise it runs once,
/// on the cancelling thread, when the task is cancelled while the record is in place. The closure is passed as
/// its (function, context) pair, which is what the runtime's `(handler, handlerContext)` parameters are.
///
/// Checked against Swift 6.3.1, where `_Concurrency` declares it as
/// `_taskAddCancellationHandler(handler: () -> Void) -> UnsafeRawPointer`.
///
/// Why: ``withCancellationHandler(_:onCancel:)`` registers the handler without the three executor switches of
/// the standard library's `withTaskCancellationHandler` (see that function for the measurements). The record
/// lives on the task allocator, so it must be removed, with
/// ``swiftTaskRemoveCancellationHandler(_:)``, before anything allocated after it is freed, and before
/// `handler`'s context goes away: callers add and remove it around one scope.
@_silgen_name("cepoll_task_add_cancellation_handler")
func swiftTaskAddCancellationHandler(_ handler: () -> Void) -> UnsafeRawPointer

/// `swift_task_removeCancellationHandler(record)`: removes a record added by
/// ``swiftTaskAddCancellationHandler(_:)`` from the current task's status records and frees it: a handler
/// that has not run by then never will, however the task is cancelled later.
///
/// Checked against Swift 6.3.1, where `_Concurrency` declares it as
/// `_taskRemoveCancellationHandler(record: UnsafeRawPointer)`.
///
/// Why: the other half of ``withCancellationHandler(_:onCancel:)``.
@_silgen_name("cepoll_task_remove_cancellation_handler")
func swiftTaskRemoveCancellationHandler(_ record: UnsafeRawPointer)

/// `swift_task_getCurrent() -> AsyncTask *`: the task running on this thread, nil outside any task. Returned
/// unretained (+0); LoopSocket only compares the address and never dereferences it.
///
/// Checked against Swift 6.3.1, where `_Concurrency` declares it as
/// `_getCurrentAsyncTask() -> Builtin.NativeObject?`; as `UnsafeRawPointer?` nothing is retained or released.
///
/// Why: `AsyncSocket.executeThenClose`'s read scope records which task opened it, and each read on the loop asks
/// whether it runs in that task. The address must be the same for one task across suspensions and threads,
/// and differ between tasks alive at once (a child task included). `withUnsafeCurrentTask` gives the same
/// answer through a generic closure and a retain and release of the task: about 320 more instructions per
/// read (callgrind, async-echo-server).
@_silgen_name("cepoll_task_current")
func swiftTaskGetCurrent() -> UnsafeRawPointer?

/// `swift_task_isCancelled(task) -> bool`: whether `task` has been cancelled (a relaxed read of its status
/// flags; no lock, nothing retained).
///
/// Checked against Swift 6.3.1, where `_Concurrency` declares it as
/// `_taskIsCancelled(_ task: Builtin.NativeObject) -> Bool`; `task` is passed unretained, as
/// ``swiftTaskGetCurrent()`` returns it.
///
/// Why: every `AsyncSocket` read asks whether its task is cancelled before it reads, and looks the running
/// task up anyway for the read scope. `Task.checkCancellation()` (and `Task.isCancelled`) look it up again
/// through `withUnsafeCurrentTask`: about 100 instructions per call against 30 for this (callgrind,
/// async-echo-server).
@_silgen_name("cepoll_task_is_cancelled")
func swiftTaskIsCancelled(_ task: UnsafeRawPointer) -> Bool
