import SkyNetCluster
import SkyNetOptions
import SkyNetTransfer
import SkyNetWork

/// `--transfer`, `--return`, `--cleanup`, `--trc`, `--basefile` and `--max-file-size`: the
/// files that travel with a scan's tasks, read into one `TransferSpec`.
extension ScanCommand {
    /// The options of the "files" section, in the order help lists them.
    static let transferOptions: [Option<ScanCommand>] = [
        .init("transfer", .flag, usage: "[--transfer]", line: 7, section: 3, "",
              "each input is a path to a file here: it is sent with its task, written",
              "in the task's own work directory on the node at the same relative",
              "path (an absolute one loses its leading /), and the command runs",
              "there, so {} names that copy; this process's own system copies nothing"),
        .init("return", .text, repeats: true, usage: "[--return TEMPLATE]", line: 7, section: 3, "TEMPLATE",
              "after a task succeeds, fetch the file TEMPLATE names on the node",
              "({.}.png: replacement strings as in --job, but not {%}) to the same",
              "path here, whole or not at all; a missing one fails the task, which",
              "runs again; repeatable"),
        .init("cleanup", .flag, usage: "[--cleanup]", line: 7, section: 3, "",
              "remove each task's work directory on the node as soon as its result",
              "and files are back (also after a failure); without it, a node",
              "removes them when the scan's link ends"),
        .init("trc", .text, repeats: true, usage: "[--trc TEMPLATE]", line: 7, section: 3, "TEMPLATE",
              "--transfer --return TEMPLATE --cleanup; repeatable"),
        .init("basefile", .text, repeats: true, usage: "[--basefile FILE]", line: 8, section: 3, "FILE",
              "send FILE once to each node before its first task; every task there",
              "finds it in its work directory at the same relative path",
              "(--job run='./process.sh {}' --basefile process.sh); repeatable"),
        .init("max-file-size", .bytes(NodeCommand.maxFileSizeRange), default: "1G", usage: "[--max-file-size <default>]", line: 8, section: 3, "BYTES",
              "the largest file sent or returned, <range> (default <default>); a larger",
              "input or basefile is refused before anything is sent",
              spawned: { scan in scan.maxFileSizeGiven.map { ["--max-file-size", String($0)] } ?? [] }),
    ]

    /// Reads the file options into a spec (inactive when none was given) and checks them
    /// against the rest of the command line: a command job, --inputs for --transfer, each
    /// template one word without `{%}`, each basefile a regular file here within the limit.
    static func parseTransfer(_ args: Arguments, job: String, inputsPath: String?) throws(UsageError) -> TransferSpec {
        var spec = TransferSpec()
        let trc = args.strings("trc")
        spec.transfer = args.flag("transfer") || !trc.isEmpty
        spec.cleanup = args.flag("cleanup") || !trc.isEmpty
        spec.maxFileSize = Int64(try args.bytes("max-file-size"))
        let templates = args.strings("return") + trc
        let basefiles = args.strings("basefile")
        for (name, values) in [("--return and --trc", templates), ("--basefile", basefiles)] where values.count > TransferSpec.maxReturns {
            throw UsageError("\(name) are given \(values.count) times: at most \(TransferSpec.maxReturns)")
        }
        for text in templates {
            do {
                let template = try ReturnTemplate(text)
                // By bytes: Swift's == merges `café` in NFC and NFD, which name two files.
                if !spec.returns.contains(where: { $0.text.utf8.elementsEqual(text.utf8) }) { spec.returns.append(template) }
            } catch {
                throw UsageError("--return \(text): \(error)")
            }
        }
        var paths: [TransferPath] = []
        for text in basefiles {
            do { paths.append(try TransferPath(text)) } catch { throw UsageError("--basefile \(text): \(error)") }
        }
        do { spec.basefiles = try TransferSpec.distinctBasefiles(paths) } catch { throw UsageError(error.description) }
        try checkBasefiles(spec.basefiles, maxSize: spec.maxFileSize)
        guard spec.isActive else {
            if args.string("max-file-size") != nil {
                throw UsageError("--max-file-size bounds the files of --transfer, --return and --basefile: give one of them")
            }
            return spec
        }
        if job == JobRegistry.scan {
            throw UsageError("files travel with the tasks of a command job: give --job NAME=COMMAND (the built-in scan takes none)")
        }
        if spec.transfer, inputsPath == nil {
            throw UsageError("--transfer sends each input as a file: give --inputs FILE, one path a line")
        }
        return spec
    }

    /// Each basefile must be a regular file here, reached without a symbolic link, within the
    /// limit: said now rather than by every node's refusal. (The command line is read before
    /// the scan starts, on the main thread: no task waits on these calls.)
    private static func checkBasefiles(_ paths: [TransferPath], maxSize: Int64) throws(UsageError) {
        guard !paths.isEmpty else { return }
        let roots: ReturnRoots
        do { roots = try ReturnRoots.current() } catch { throw UsageError("--basefile: \(error)") }
        for path in paths {
            do {
                let file = try RemoteSystem.openInput(path, in: roots)
                defer { file.close() }
                let size = try file.status().size
                if size > maxSize {
                    throw UsageError("--basefile \(path) is \(ByteCount.approximate(size)), over --max-file-size \(ByteCount.approximate(maxSize))")
                }
            } catch let error as UsageError {
                throw error
            } catch let failure as ScanFailure {
                throw UsageError("--basefile \(path): \(failure.message)")
            } catch {
                throw UsageError("--basefile \(path): \(error)")
            }
        }
    }
}
