import Foundation
@testable import SkyNetMetrics
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// The process metrics: `/proc/PID/stat` read after the last `)`, and this process's own values.
@Suite struct ProcessMetricsTests {
    /// A command name may hold spaces and parentheses: `(a) (b)` must not shift the fields.
    @Test func aStatLineWhoseCommandHoldsParenthesesIsReadAfterTheLastOne() throws {
        // Fields 3…24: state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt,
        // cmajflt, utime (14), stime (15), cutime, cstime, priority, nice, threads, itrealvalue,
        // starttime (22), vsize (23), rss (24), then more.
        let line = "1234 (a) (b) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 1000 123456789 2048 18446744073709551615 1 1\n"
        let stat = try #require(ProcessMetrics.parse(stat: line, btime: 1_700_000_000, ticks: 100, pageSize: 4096))
        #expect(stat.cpuSeconds == 3)
        #expect(stat.startTime == 1_700_000_010)
        #expect(stat.virtualBytes == 123_456_789)
        #expect(stat.residentBytes == 2048 * 4096)
    }

    @Test func aShortOrNamelessLineIsNotAStat() {
        #expect(ProcessMetrics.parse(stat: "1234 (a) S 1 2 3", btime: 0, ticks: 100, pageSize: 4096) == nil)
        #expect(ProcessMetrics.parse(stat: "no name here", btime: 0, ticks: 100, pageSize: 4096) == nil)
    }

    @Test func theBootTimeIsTheBtimeLine() {
        #expect(ProcessMetrics.bootTime(in: "cpu 1 2 3\nbtime 1700000000\nprocesses 5\n") == 1_700_000_000)
        #expect(ProcessMetrics.bootTime(in: "cpu 1 2 3\n") == nil)
    }

    #if os(Linux)
    @Test func thisProcessesValuesAreSane() throws {
        let families = ProcessMetrics.families()
        func value(_ name: String) throws -> Double {
            try #require(families.first { $0.name == name }?.samples.first?.value, "\(name) missing")
        }
        #expect(try value("process_resident_memory_bytes") > 0)
        #expect(try value("process_virtual_memory_bytes") >= value("process_resident_memory_bytes"))
        #expect(try value("process_open_fds") >= 3)
        #expect(try value("process_max_fds") >= value("process_open_fds"))
        #expect(try value("process_cpu_seconds_total") > 0)
        let age = Date().timeIntervalSince1970 - (try value("process_start_time_seconds"))
        #expect(age >= -2 && age < 3600, "started \(age) s ago")
        // One HELP/TYPE each, and a counter's name ends in _total.
        #expect(Set(families.map(\.name)).count == families.count)
        #expect(families.filter { $0.kind == .counter }.allSatisfy { $0.name.hasSuffix("_total") })
    }
    #endif
}
