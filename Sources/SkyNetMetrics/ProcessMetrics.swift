import SkyNetRuntime
/// The process metrics Prometheus clients export by convention (`process_cpu_seconds_total`,
/// `process_start_time_seconds`, memory, descriptors), read from `/proc` when a scrape comes.
/// Linux only: elsewhere there are none.
package enum ProcessMetrics {
    /// What `/proc/self/stat` says, in the units of the metrics.
    package struct Stat: Sendable, Equatable {
        package var cpuSeconds: Double
        /// Seconds since the Unix epoch.
        package var startTime: Double
        package var virtualBytes: Double
        package var residentBytes: Double
    }

    package static func families() -> [MetricFamily] {
        #if os(Linux)
        var families: [MetricFamily] = []
        if let stat = readText("/proc/self/stat"), let system = readText("/proc/stat"),
           let stat = parse(stat: stat, btime: bootTime(in: system), ticks: Double(sysconf(Int32(_SC_CLK_TCK))),
                            pageSize: Double(sysconf(Int32(_SC_PAGESIZE)))) {
            families += [
                .single("process_cpu_seconds_total", help: "Total user and system CPU time spent in seconds.",
                        kind: .counter, value: stat.cpuSeconds),
                .single("process_start_time_seconds", help: "Start time of the process since unix epoch in seconds.",
                        kind: .gauge, value: stat.startTime),
                .single("process_virtual_memory_bytes", help: "Virtual memory size in bytes.", kind: .gauge, value: stat.virtualBytes),
                .single("process_resident_memory_bytes", help: "Resident memory size in bytes.", kind: .gauge, value: stat.residentBytes),
            ]
        }
        if let open = openDescriptors() {
            families.append(.single("process_open_fds", help: "Number of open file descriptors.", kind: .gauge, value: Double(open)))
        }
        let limit = DescriptorLimit.current
        if limit >= 0 {
            families.append(.single("process_max_fds", help: "Maximum number of open file descriptors.", kind: .gauge, value: Double(limit)))
        }
        return families
        #else
        return []
        #endif
    }

    /// The values of a `/proc/PID/stat` line, its fields counted after the last `)` (the
    /// command name before it may hold spaces and parentheses); nil when it is not one.
    /// `btime` is the boot time (seconds since the epoch), `ticks` the clock ticks a second.
    package static func parse(stat: String, btime: Double?, ticks: Double, pageSize: Double) -> Stat? {
        guard let close = stat.lastIndex(of: ")"), ticks > 0 else { return nil }
        // Field 3 (the state) is the first after the name: field N is at N - 3.
        let fields = stat[stat.index(after: close)...].split(whereSeparator: { $0 == " " || $0 == "\n" })
        func number(_ field: Int) -> Double? {
            let index = field - 3
            return fields.indices.contains(index) ? Double(fields[index]) : nil
        }
        guard let utime = number(14), let stime = number(15), let start = number(22),
              let vsize = number(23), let rss = number(24) else { return nil }
        return Stat(cpuSeconds: (utime + stime) / ticks, startTime: (btime ?? 0) + start / ticks,
                    virtualBytes: vsize, residentBytes: rss * pageSize)
    }

    /// The `btime` line of `/proc/stat`.
    static func bootTime(in procStat: String) -> Double? {
        for line in procStat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst("btime ".count).trimmingPrefix(" "))
        }
        return nil
    }

    /// Entries of `/proc/self/fd` (the directory being read is one of them, as other clients count).
    static func openDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = directoryEntryName(entry)
            let isDot = name == [UInt8(ascii: ".")] || name == [UInt8(ascii: "."), UInt8(ascii: ".")]
            if !isDot { count += 1 }
        }
        return count
    }

    /// A small file of `/proc` whole (at most 64 KiB), or nil.
    static func readText(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65536 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
