import Foundation
import SkyNet
import SkyNetRuntime

extension ChildRun {
    /// Runs `executable arguments…` to the end with stdout in a pipe read on a thread of its
    /// own (large reads, nothing kept but a tail), for outputs too large to hold: a scan's ten
    /// million lines. Past `deadline` the child is stopped and this throws.
    static func stream(_ executable: String, _ arguments: [String], firstLine: @escaping @Sendable (String) -> Bool,
                       tailBytes: Int = 4096, deadline: Duration = .seconds(600)) throws -> ChildRun {
        var options = ChildProcess.Options(arguments: arguments)
        options.stdout = .pipe
        let started = ContinuousClock.now
        let child = try ChildProcess.spawn(executable, options)
        guard let fd = child.takeOutputPipe(1) else {
            child.send(SIGKILL)
            _ = try? awaitExit(of: child, deadline: .seconds(10), named: executable)
            throw BenchError("\(executable): no stdout pipe")
        }
        let drained = PipeDrain.start(fd: fd, since: started, firstLine: firstLine, tailBytes: tailBytes)
        let memory = PeakMemory(pid: child.pid)
        let ended = try awaitExit(of: child, deadline: deadline, named: executable)
        let seconds = (ContinuousClock.now - started).seconds
        let peak = memory.finish().kib
        // The scan starts no process of its own, so its exit closed the pipe's only writer.
        guard let output = try blocking({ try? await withTimeout(.seconds(10)) { await drained.value } }) else {
            throw BenchError("\(executable): stdout still open 10 s after it exited")
        }
        return ChildRun(status: ended.status, peakKiB: peak, seconds: seconds, stdout: output.tail,
                        firstLineSeconds: output.firstLineSeconds, bytes: output.bytes)
    }
}

/// Reads a pipe to its end on a thread of its own.
enum PipeDrain {
    /// Reads `fd` to EOF with large reads and closes it; notes when the first complete line
    /// `firstLine` accepts arrived (lines are looked at only until then, each cut at 4 KiB),
    /// keeps the last `tailBytes` bytes.
    static func start(fd: Int32, since started: ContinuousClock.Instant, firstLine: @escaping @Sendable (String) -> Bool,
                      tailBytes: Int) -> AsyncSignal<(firstLineSeconds: Double?, tail: String, bytes: Int)> {
        let done = AsyncSignal<(firstLineSeconds: Double?, tail: String, bytes: Int)>()
        // A larger pipe (1 MiB, Linux's default ceiling for unprivileged processes) lets the
        // child write on while this thread is between reads, as a file would; if refused, the
        // default 64 KiB pipe still works, the child just waits on it more often.
        #if os(Linux)
        _ = fcntl(fd, 1031 /* F_SETPIPE_SZ */, 1 << 20)
        #endif
        startThread(named: "skynet-bench-drain") {
            let clock = ContinuousClock()
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var lines = LineFramer(maxLineBytes: 4096, overLong: .truncate), tail: [UInt8] = []
            var first: Double?, bytes = 0
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                bytes += count
                if first == nil {
                    let arrived = clock.now
                    buffer.withUnsafeBytes { chunk in
                        lines.split(UnsafeRawBufferPointer(rebasing: chunk[..<count])) { piece in
                            guard first == nil, case .line(let bytes) = piece, firstLine(String(decoding: bytes, as: UTF8.self)) else { return }
                            first = (arrived - started).seconds
                        }
                    }
                }
                // Once the first line came, nothing here is timed: small reads are followed by a
                // pause, so that this thread wakes a few hundred times a second instead of once
                // per line written, and takes (almost) no CPU from the child it measures.
                if first != nil, count < buffer.count / 2 { sleepOnThisThread(for: .milliseconds(2)) }
                if count >= tailBytes {
                    tail = Array(buffer[(count - tailBytes)..<count])
                } else {
                    tail.append(contentsOf: buffer[0..<count])
                    if tail.count > tailBytes { tail.removeFirst(tail.count - tailBytes) }
                }
            }
            close(fd)
            done.fulfil((first, String(decoding: tail, as: UTF8.self), bytes))
        }
        return done
    }
}
