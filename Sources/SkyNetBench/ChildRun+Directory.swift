import Foundation
import SkyNet
import SkyNetRuntime

extension ChildRun {
    /// `run`, in `directory` (W14's tools take paths relative to the files' folder), with
    /// stderr kept too: a failed transfer's row says why. `stdout` holds all of stdout, and a
    /// failure's message the last 2,000 bytes of stderr.
    static func run(_ executable: String, _ arguments: [String], in directory: String,
                    environment: [String: String]? = nil, deadline: Duration = .seconds(300)) throws -> ChildRun {
        let outPath = Children.temporary(NSTemporaryDirectory() + "skynet-bench-\(UUID().uuidString).out")
        let errPath = Children.temporary(NSTemporaryDirectory() + "skynet-bench-\(UUID().uuidString).err")
        defer {
            Children.remove(outPath)
            Children.remove(errPath)
        }
        var options = ChildProcess.Options(arguments: arguments, environment: environment)
        options.stdout = .file(outPath, append: false)
        options.stderr = .file(errPath, append: false)
        options.workingDirectory = directory
        let started = ContinuousClock.now
        let child = try ChildProcess.spawn(executable, options)
        let memory = PeakMemory(pid: child.pid)
        let ended = try awaitExit(of: child, deadline: deadline, named: executable)
        let seconds = (ContinuousClock.now - started).seconds
        let peak = memory.finish().kib
        let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        guard ended.status == 0 else {
            let errors = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
            throw BenchError("\((executable as NSString).lastPathComponent) exited with status \(ended.status): \(errors.suffix(2000))")
        }
        return ChildRun(status: ended.status, peakKiB: peak, seconds: seconds, stdout: output)
    }
}
