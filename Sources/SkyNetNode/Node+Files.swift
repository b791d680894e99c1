import SkyNetRuntime
import SkyNetWork

extension Node {
    /// Whether the node takes file work: it was not told `--no-files`, and it runs a job other
    /// than the built-in scan (which reads no file). Its welcome offers `files` then.
    var offersFiles: Bool {
        options.acceptsFiles && system.jobs.summaries.keys.contains { $0 != JobRegistry.scan }
    }

    /// Removes the work root on a thread of its own (a large tree takes time), awaited.
    func removeWorkRoot() async {
        let files = self.files
        _ = try? await onOwnThread(named: "skynet-workroot") { files.remove() }
    }
}
