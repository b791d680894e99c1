import SkyNetRuntime
import SkyNetScheduler
import SkyNetTransfer
import SkyNetWire
import SkyNetWork

/// The failure code of a peer whose welcome offers no files to a scan that needs them.
extension FailureCode {
    package static let lacksFiles: FailureCode = "lacks-files"
}

extension PeerLinks {
    /// Readies a freshly welcomed peer for a scan whose files travel: it must offer
    /// files (else `lacks-files`), and it gets every `--basefile` (each stored before the next)
    /// before any task. Returns the refusal to report (the link is then closed and asked again
    /// rarely), or nil: ready (also when the scan has no files). Throws when the link ended.
    static func readyForFiles(_ peer: PeerConnection, named name: String, settings: Settings) async throws -> ClusterEvent? {
        guard let spec = settings.transfer, spec.isActive else { return nil }
        guard let files = peer.files else {
            return .refused(name, code: .lacksFiles, message: "its welcome offers no files: an older skynet, or one started with --no-files")
        }
        guard FileSupport.versions.contains(files.version) else {
            return .refused(name, code: .lacksFiles,
                            message: "its welcome offers files version \(files.version), not 1 to \(FileSupport.currentVersion): run the same skynet version as the nodes")
        }
        guard !spec.basefiles.isEmpty else { return nil }
        let roots: ReturnRoots
        if let given = settings.returnRoots {
            roots = given
        } else {
            roots = try await onBlockingPool { try ReturnRoots.current() }
        }
        for basefile in spec.basefiles {
            if let refusal = try await push(basefile, to: peer, named: name, spec: spec, roots: roots, timeout: settings.timeout) {
                return refusal
            }
        }
        return nil
    }

    /// Sends one basefile through the link's pump and awaits `stored`; a refusal (the node's
    /// `error`, or this side's: missing, over the limit, changed while sent) is the event to report.
    static func push(_ basefile: TransferPath, to peer: PeerConnection, named name: String, spec: TransferSpec, roots: ReturnRoots,
                     timeout: Duration) async throws -> ClusterEvent? {
        let id = peer.nextID()
        let over = Locked(false)
        let limit = OutgoingFile.limit(scan: spec.maxFileSize, peer: peer.files?.maxFileSize, named: name)
        let file = OutgoingFile(
            id: id, file: nil, maxSize: limit.maxSize, limitOwner: limit.owner, name: basefile.text,
            open: { () throws(ScanFailure) -> OpenFile in try RemoteSystem.openInput(basefile, in: roots) },
            header: { Request.basefile(BasefileRequest(id: id, path: basefile.onNode.text, file: $0)).line },
            isCancelled: { over.withLock { $0 } },
            done: { result in
                guard case .failure(let failure) = result else { return }
                peer.fail(id, transfer: failure)
            })
        do {
            defer { over.withLock { $0 = true } }
            let reply = try await peer.request(id: id, sending: { peer.pump.enqueue(file) }, timeout: nil, liveness: timeout)
            guard case .stored = reply else {
                return .refused(name, code: .badReply, message: "it answered --basefile \(basefile) with \(reply)")
            }
            return nil
        } catch let error as WireError {
            return .refused(name, code: error.code, message: error.message ?? "it refused --basefile \(basefile)")
        } catch let failure as ScanFailure {
            return .refused(name, code: failure.code, message: "--basefile \(basefile): \(failure.message)")
        }
    }
}
