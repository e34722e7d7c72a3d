import SharedTestSupport

/// The child-process runner the test targets share (Tests/SharedTestSupport/ChildProcess.swift).
typealias ChildProcess = SharedTestSupport.ChildProcess
