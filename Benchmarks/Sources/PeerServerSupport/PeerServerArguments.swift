import Dispatch
import Glibc

/// The command line of the SwiftNIO peer servers, the same as the project's example servers:
/// `--port P [--host H] [--loops N]`, one "... listening on H port P ..." line when ready, and a clean exit
/// on SIGINT/SIGTERM. Unlike the project's servers they run one event loop unless told otherwise.
public struct PeerServerArguments: Sendable {
    /// The port to listen on (0: any free port, printed at start).
    public var port = 0
    /// The interface to listen on.
    public var host = "0.0.0.0"
    /// SwiftNIO event loops (threads) to run.
    public var loops = 1

    /// Parses `CommandLine.arguments`, or prints usage and exits.
    public static func parse(name: String, extraUsage: String = "", extra: (String, () -> String?) -> Bool = { _, _ in false }) -> PeerServerArguments {
        var result = PeerServerArguments()
        var rest = CommandLine.arguments.dropFirst()
        func value(_ flag: String) -> String {
            guard let next = rest.popFirst() else { fail("\(flag) needs a value") }
            return next
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--port", "-p":
                guard let port = Int(value(flag)), (0...65535).contains(port) else { fail("--port takes a number from 0 to 65535") }
                result.port = port
            case "--host":
                result.host = value(flag)
            case "--loops":
                guard let loops = Int(value(flag)), loops >= 1, loops <= 1024 else { fail("--loops takes a number from 1 to 1024") }
                result.loops = loops
            case "--help", "-h":
                print("usage: \(name) --port P [--host H] [--loops N]\(extraUsage)")
                exit(0)
            default:
                if !extra(flag, { rest.popFirst() }) {
                    fail("unknown option \(flag) (try --help)")
                }
            }
        }
        return result
    }

    /// Writes `line` and a newline to standard output at once (unbuffered, so scripts waiting for it see it).
    public static func announce(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { Glibc.write(1, $0, strlen($0)) }
    }

    /// Prints `message` to standard error and exits with status 2.
    public static func fail(_ message: String) -> Never {
        let line = "error: \(message)\n"
        _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
        exit(2)
    }

    /// Blocks until SIGINT or SIGTERM arrives.
    public static func waitForTermination() {
        let stop = DispatchSemaphore(value: 0)
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            sources.append(source)
        }
        stop.wait()
        withExtendedLifetime(sources) {}
    }
}
