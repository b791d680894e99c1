/// What a scan's files do: `--transfer`, `--return`, `--cleanup`, `--basefile` and
/// `--max-file-size`. Inactive (the default) when none of the four options was given.
package struct TransferSpec: Sendable {
    /// Each task's input is a local file, sent with it.
    package var transfer = false
    /// The task's work directory is removed on the node once its results are back.
    package var cleanup = false
    /// The files fetched back after a task succeeds.
    package var returns: [ReturnTemplate] = []
    /// Files sent once to each system before its first task.
    package var basefiles: [TransferPath] = []
    /// The largest file sent or accepted back (default 1 GiB).
    package var maxFileSize: Int64 = 1 << 30
    /// Whether each returned file's SHA-256 is kept (a journal records it and a resume checks
    /// the file against it; `--json` prints it): over a link that sends no digest (files
    /// version 2) the returned bytes are then hashed as they arrive, and otherwise not at all.
    package var keepsDigests = true

    /// The most `--return` templates (and `--basefile`s) a scan may give.
    package static let maxReturns = 64

    package init(transfer: Bool = false, cleanup: Bool = false, returns: [ReturnTemplate] = [], basefiles: [TransferPath] = [],
                maxFileSize: Int64 = 1 << 30) {
        self.transfer = transfer
        self.cleanup = cleanup
        self.returns = returns
        self.basefiles = basefiles
        self.maxFileSize = maxFileSize
    }

    /// Whether any of `--transfer`, `--return`, `--cleanup`, `--basefile` was given: the scan
    /// then goes only to peers that offer files.
    package var isActive: Bool { transfer || cleanup || !returns.isEmpty || !basefiles.isEmpty }

    /// The paths of one task: its input here and on the node, and each returned file's path on
    /// the node and here. Pure; a path that cannot travel is a `TransferRefusal` (final).
    ///
    /// Templates naming one file for this input (`{}.gz` and `{.}.txt.gz` of `a.txt`) return
    /// it once, as the first of them (a node refuses a request naming a path twice). One file
    /// on the node for two different targets here cannot be both: the task is refused.
    package func plan(for task: ScanTask) throws(TransferRefusal) -> TransferPlan {
        let input = task.inputText
        var localInput: TransferPath?
        var nodeInput = input
        if transfer {
            let local = try TransferPath(input)
            localInput = local
            nodeInput = local.onNode.text
        }
        var returns: [(node: TransferPath, local: TransferPath)] = []
        var kept: [ReturnTemplate] = []
        for template in self.returns {
            let local = try Self.path(template, input: input, sector: task.input)
            let node = try Self.path(template, input: nodeInput, sector: task.input).onNode
            if returns.contains(where: { $0.local.namesSameFile(as: local) }) { continue }
            if let first = returns.firstIndex(where: { $0.node.namesSameFile(as: node) }) {
                throw TransferRefusal("--return \(kept[first].text) and --return \(template.text) both fetch \(returns[first].node) from the node, to \(returns[first].local) and \(local) here")
            }
            returns.append((node: node, local: local))
            kept.append(template)
        }
        // A node refuses an input or a return with a basefile's name: the same for every
        // system, so said here once, for good, instead of five attempts of `bad-request`.
        let onNode = (localInput.map { [("the input", $0.onNode)] } ?? []) + zip(kept, returns).map { ("--return \($0.text)", $1.node) }
        for (what, path) in onNode {
            if let basefile = basefiles.first(where: { $0.onNode.namesSameFile(as: path) }) {
                throw TransferRefusal("\(what) is \(path) on the node, the place of --basefile \(basefile): give them different names")
            }
        }
        return TransferPlan(localInput: localInput, nodeInput: nodeInput, returns: returns)
    }

    /// `paths` (`--basefile`s) once each, in order: one spelled again (`./p.sh` or `.//p.sh`
    /// after `p.sh`, `TransferPath.namesSameFile`) is the same file, left out. Names equal
    /// only as Swift strings (`café` in NFC and in NFD) are two files, both kept. Two paths
    /// that would be one on a node (`/p.sh` and `p.sh`, `onNode`) are refused: they may be two
    /// files here, and a node can hold only one of them.
    package static func distinctBasefiles(_ paths: [TransferPath]) throws(TransferRefusal) -> [TransferPath] {
        var kept: [TransferPath] = []
        for path in paths where !kept.contains(where: { $0.namesSameFile(as: path) }) {
            if let other = kept.first(where: { $0.onNode.namesSameFile(as: path.onNode) }) {
                throw TransferRefusal("--basefile \(other) and --basefile \(path) would both be \(path.components.joined(separator: "/")) on a node: give one of them")
            }
            kept.append(path)
        }
        return kept
    }

    private static func path(_ template: ReturnTemplate, input: String, sector: Int) throws(TransferRefusal) -> TransferPath {
        do {
            return try TransferPath(template.path(input: input, sector: sector))
        } catch {
            throw TransferRefusal("--return \(template.text): \(error.description)")
        }
    }
}

/// The paths of one task's files (`TransferSpec.plan(for:)`).
package struct TransferPlan: Sendable {
    /// The input file here, as written (nil without `--transfer`: the input is plain text).
    package let localInput: TransferPath?
    /// The input as the node gets it: the input file's path in the work directory (leading
    /// `/`s removed), or the plain input text.
    package let nodeInput: String
    /// Each `--return` template's file: where the node finds it (relative to the work
    /// directory) and where it is written here (as the template gave it on the input).
    package let returns: [(node: TransferPath, local: TransferPath)]

    package init(localInput: TransferPath?, nodeInput: String, returns: [(node: TransferPath, local: TransferPath)]) {
        self.localInput = localInput
        self.nodeInput = nodeInput
        self.returns = returns
    }
}

/// A file a task returned, as the journal records it: its path as the template gave it (relative
/// to the scan's directory, or absolute), its size and its SHA-256.
package struct ReturnedFile: Sendable, Equatable {
    package let path: String
    package let size: Int64
    package let sha256: [UInt8]

    package init(path: String, size: Int64, sha256: [UInt8]) {
        self.path = path
        self.size = size
        self.sha256 = sha256
    }
}
