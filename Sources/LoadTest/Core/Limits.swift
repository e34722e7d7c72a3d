import Glibc

/// The operating-system limits that cap how many connections a run can open.
package enum Limits {
    /// The outcome of checking (and raising) the file descriptor limit.
    package struct FileLimit: Sendable, Equatable {
        /// The soft limit after any raise.
        var soft: UInt64
        /// The hard limit.
        var hard: UInt64
        /// Whether the soft limit was raised to the hard one.
        var raised: Bool
        /// Descriptors needed.
        package var needed: Int

        /// Whether the run fits.
        package var fits: Bool { UInt64(needed) <= soft }

        /// How many connections fit, given `perConnection` descriptors each and `reserve` for everything else.
        func connectionsThatFit(perConnection: Int, reserve: Int) -> Int {
            max(0, (Int(clamping: soft) - reserve) / max(1, perConnection))
        }
    }

    /// Descriptors kept back for loops, epoll, eventfds, standard streams and files.
    static let reserve = 64

    /// Checks `RLIMIT_NOFILE` for `needed` descriptors, raising the soft limit to the hard limit if that helps.
    package static func checkFileLimit(needed: Int) -> FileLimit {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else {
            return FileLimit(soft: UInt64.max, hard: UInt64.max, raised: false, needed: needed)
        }
        var raised = false
        if UInt64(needed) > UInt64(limit.rlim_cur) && limit.rlim_cur < limit.rlim_max {
            var wanted = limit
            wanted.rlim_cur = limit.rlim_max
            if setrlimit(resource, &wanted) == 0 {
                raised = true
                limit = wanted
            }
        }
        return FileLimit(soft: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max), raised: raised, needed: needed)
    }

    /// What to tell a user whose run does not fit.
    package static func advice(_ limit: FileLimit, connections: Int, perConnection: Int) -> String {
        let fit = limit.connectionsThatFit(perConnection: perConnection, reserve: reserve)
        return """
            \(connections) connections need about \(limit.needed) file descriptors, but this process may open \
            \(limit.soft) (hard limit \(limit.hard)): at most \(fit) connections fit. Raise the limit with \
            `ulimit -n \(limit.needed + 1024)` in the shell (as root, or after raising the hard limit in \
            /etc/security/limits.conf or with `prlimit`), or use fewer --connections.
            """
    }

    /// The local (ephemeral) port range, from `/proc/sys/net/ipv4/ip_local_port_range`.
    static func ephemeralPortRange() -> ClosedRange<Int>? {
        guard let text = readSmallFile("/proc/sys/net/ipv4/ip_local_port_range") else { return nil }
        let numbers = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        guard numbers.count == 2, numbers[0] <= numbers[1] else { return nil }
        return numbers[0]...numbers[1]
    }

    /// A process's CPU time so far, user plus system, in seconds (all threads; `/proc/PID/stat` fields 14
    /// and 15); nil if the process is gone.
    static func cpuSeconds(pid: Int32) -> Double? {
        guard let text = readSmallFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm)": field 3 is the state; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (user + system) / (ticks > 0 ? ticks : 100)
    }

    /// Whether process `pid` exists and its figures can be read (`/proc/PID/stat`).
    static func processExists(_ pid: Int32) -> Bool {
        access("/proc/\(pid)/stat", R_OK) == 0
    }

    /// A process's resident memory in MiB (`VmRSS` in `/proc/PID/status`, see ``ProcessStatus``), or nil if it
    /// cannot be read.
    static func residentMiB(pid: Int32) -> Double? {
        ProcessStatus.read(pid: pid)?.residentMiB
    }

    /// The calling thread's CPU time so far, user plus system, in seconds (`getrusage(RUSAGE_THREAD)`).
    static func threadCPUSeconds() -> Double {
        var usage = rusage()
        // RUSAGE_THREAD (1) is Linux's; the Glibc module does not export the constant.
        guard getrusage(__rusage_who_t(1), &usage) == 0 else { return 0 }
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// A short text file's contents (for /proc).
    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }
}
