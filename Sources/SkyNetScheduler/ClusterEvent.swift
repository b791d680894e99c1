import SkyNetWork

/// How a link to a node is kept from eyes on the network.
public enum LinkProtection: String, Sendable {
    /// A TCP link with the cluster's token: every message encrypted and authenticated.
    case encrypted
    /// A channel of an ssh login: ssh encrypts it.
    case ssh
    /// A TCP link without a token: readable by anyone on the path.
    case plain
}

/// What a coordinator's links to its peers report.
public enum ClusterEvent: Sendable, CustomStringConvertible {
    /// Linked: the node welcomed us and takes work, over a link of that protection.
    case connected(String, link: LinkProtection)
    /// The link ended (`reason`); its running tasks run elsewhere, and it is dialled again.
    case disconnected(String, reason: String)
    /// Not reachable; reported once until it connects, retried with backoff.
    case unreachable(String, address: String, error: String)
    /// An ssh host could not be used (`login`: `alice@gpu1:2222`): reported once with ssh's own
    /// words (`reason`) and what to do (`fix`), retried with backoff (or rarely, for good refusals).
    case sshUnreachable(String, login: String, reason: String, fix: String)
    /// `--ship`: the host's copy of this build was not this build (`reason`: its hash), was
    /// removed unrun and is shipped again: said once per host.
    case shippingAgain(String, reason: String)
    /// Refused the hello for good (`unauthorized`, `unsupported-version`): reported once, with
    /// the fix (`refusalHint`), and asked again only rarely.
    case refused(String, code: FailureCode, message: String)
    /// Answered the hello without proving it knows the token (a node without it, or an
    /// impostor): reported once, sent nothing, asked again only rarely.
    case unauthorized(String, reason: String)
    /// Its welcome does not list the scan's job (`jobs`: the ones it does list): reported once,
    /// closed, not used, and asked again only rarely (its operator must restart it with the job).
    case lacksJob(String, job: String, jobs: [String])
    /// It runs the scan's job as `summary`, not as `expected` (the coordinator's own, or the
    /// first peer's), compared word by word: handled as `lacksJob`, unless the scan allows the
    /// mismatch (`used`): then warned about once and used.
    case jobDiffers(String, job: String, summary: String, expected: String, used: Bool)
    /// Its program declares other distributed actor types than ours (`build`, `expected`:
    /// which types each declares; `build` empty: it hosts no actors): another program or
    /// another build. Handled as `lacksJob`: reported once, closed, not used, asked again
    /// only rarely.
    case actorsDiffer(String, build: String, expected: String)
    /// A request timed out: no new work until it answers a ping.
    case unresponsive(String)
    /// Answered its ping after `unresponsive`: it takes work again.
    case responsive(String)
    /// Given no new work from now on: the node said it drains (it is stopping), or
    /// its address left DNS. Its running tasks may finish; `reason` says which and how long.
    case draining(String, reason: String)
    /// A new address of a cluster.json group with `every_address`: the peer
    /// `group/ADDRESS` joins, its link reports `connected` or `unreachable` as any other;
    /// `host` is the name the group resolves.
    case discovered(String, group: String, host: String, address: String)
    /// A member of an address group whose address returned while it drained: it takes new
    /// work again.
    case returned(String, reason: String)
    /// An address group's host resolves to more addresses than a group may have: only the
    /// first `used`, in sorted order, are members (said once, until the answer fits again).
    case tooManyAddresses(String, host: String, found: Int, used: Int)

    /// The peer's name.
    package var peer: String {
        switch self {
        case .connected(let name, _), .disconnected(let name, _), .unreachable(let name, _, _), .sshUnreachable(let name, _, _, _),
             .shippingAgain(let name, _),
             .refused(let name, _, _), .unauthorized(let name, _), .lacksJob(let name, _, _), .jobDiffers(let name, _, _, _, _),
             .actorsDiffer(let name, _, _),
             .unresponsive(let name), .responsive(let name), .draining(let name, _), .discovered(let name, _, _, _), .returned(let name, _),
             .tooManyAddresses(let name, _, _, _): name
        }
    }

    /// The log line of the event.
    public var description: String {
        switch self {
        case .connected(let name, _): "[Cluster] Connected: \(name)"
        case .disconnected(let name, let reason): "[Cluster] Disconnected: \(name) (\(reason))"
        case .unreachable(let name, let address, let error): "[Cluster] Unreachable: \(name) at \(address) (\(error)); retrying"
        case .sshUnreachable(let name, _, let reason, let fix): "[Cluster] Unreachable: \(name) (\(reason))" + (fix.isEmpty ? "" : " — \(fix)")
        case .shippingAgain(let name, let reason): "[Cluster] Shipping again: \(name) (\(reason))"
        case .refused(let name, let code, _): "[Cluster] Refused by \(name): \(code) (\(refusalHint))"
        case .unauthorized(let name, let reason): "[Cluster] Unauthorized: \(name) (\(reason))"
        case .lacksJob(let name, let job, let jobs):
            "[Cluster] Lacks job: \(name) has no job '\(job)' (its jobs: \(jobs.joined(separator: ", ")))"
        case .jobDiffers(let name, let job, let summary, let expected, true):
            "[Cluster] Warning: \(name) runs job '\(job)' as '\(summary)', not '\(expected)'"
        case .jobDiffers(let name, let job, let summary, let expected, false):
            "[Cluster] Job differs: \(name) runs job '\(job)' as '\(summary)', not '\(expected)'; not used (--allow-job-mismatch uses it)"
        case .actorsDiffer(let name, "", _):
            "[Cluster] Actors differ: \(name) hosts no actors; not used (start it as this program's node: PROGRAM node --port N)"
        case .actorsDiffer(let name, let build, let expected):
            "[Cluster] Actors differ: \(name) declares other actor types (build \(build), here \(expected)); not used (run this program's own build there)"
        case .unresponsive(let name): "[Cluster] Unresponsive: \(name)"
        case .responsive(let name): "[Cluster] Responsive: \(name)"
        case .draining(let name, let reason): "[Cluster] Draining: \(name) (\(reason))"
        case .discovered(let name, _, let host, _): "[Cluster] Found: \(name) (an address of \(host))"
        case .returned(let name, let reason): "[Cluster] Returned: \(name) (\(reason))"
        case .tooManyAddresses(let name, let host, let found, let used):
            "[Cluster] Warning: \(host) resolves to \(found) addresses; \(name) uses the first \(used), in sorted order"
        }
    }

    /// What the operator can do about a refusal or a missing job (empty for other events).
    package var refusalHint: String {
        if case .lacksJob(_, let job, _) = self { return "declare it on the nodes: skynet node --job '\(job)=COMMAND'" }
        guard case .refused(_, let code, let message) = self else { return "" }
        switch code {
        case .unauthorized where message.hasPrefix("wrong token"):
            // Our handshake reached it, so we have a token: it is not the node's, or the handshake was altered.
            return "its token differs from this coordinator's (SKYNET_TOKEN or --token-file), or the handshake was altered on the way"
        case .unauthorized: return "set SKYNET_TOKEN to the nodes' token"
        case .unsupportedVersion: return (message.isEmpty ? "" : message + "; ") + "run the same skynet version as the nodes"
        default: return message
        }
    }

    /// Why no peer can run the scan, once every one of them ended as this event says.
    package var everyPeerUnusable: String {
        if case .lacksJob(_, let job, _) = self { return "no peer has the job '\(job)' (\(refusalHint))" }
        if case .jobDiffers(_, let job, _, let expected, _) = self {
            return "no peer runs the job '\(job)' as '\(expected)' (give --allow-job-mismatch to use them anyway)"
        }
        if case .actorsDiffer = self { return "every peer runs another build of this program (other actor types)" }
        if case .unauthorized(_, let reason) = self { return "no peer proved it knows the token (the last: \(reason))" }
        return "every peer refused this coordinator (\(refusalHint))"
    }
}
