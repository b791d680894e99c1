import SkyNetCluster
import SkyNetNode
import SkyNetOptions
import SkyNetSSH
import SkyNetWork

/// `--ssh`, `--ssh-file`, `--ssh-command` and `--ship`: the hosts a scan reaches by logging in
/// with ssh, each running `skynet node --stdio` for the scan's length.
extension ScanCommand {
    /// The ssh side of a scan's command line.
    struct SSHOptions: Sendable {
        /// The hosts of `--ssh` and `--ssh-file`, as peers named by their login (`alice@gpu1`).
        var nodes: [ClusterConfig.Node] = []
        var command = SSHCommand.standard
        var ship = false
    }

    /// Reads the ssh options, checking every login (`checkSSH` checks them against the rest).
    static func parseSSH(_ args: Arguments) throws(UsageError) -> SSHOptions {
        var options = SSHOptions()
        var logins: [SSHLogin] = []
        do {
            for value in args.strings("ssh") {
                let listed = try SSHLogin.list(value)
                if listed.isEmpty { throw UsageError("option '--ssh' wants [N/][USER@]HOST[:PORT], or several joined by commas") }
                logins += listed
            }
            if let path = args.string("ssh-file") {
                let listed = try SSHLogin.file(path)
                if listed.isEmpty { throw UsageError("ssh login file \(path) names no host: one [N/][USER@]HOST[:PORT] a line") }
                logins += listed
            }
        } catch let error as UsageError {
            throw error
        } catch {
            throw UsageError("\(error)")
        }
        options.nodes = logins.map { ClusterConfig.Node(name: $0.description, ssh: $0) }
        if let text = args.string("ssh-command") {
            do { options.command = try SSHCommand(text) } catch { throw UsageError("--ssh-command: \(error)") }
        }
        options.ship = args.flag("ship")
        return options
    }

    /// Checks what only makes sense with ssh hosts, once the cluster file is read too
    /// (its `"ssh"` entries count): each host once, however it is spelled (`H`, `h`, `h:22`),
    /// since two nodes on one host would double its slots.
    func checkSSH(_ args: Arguments) throws(UsageError) {
        var seen: [String: String] = [:]
        for node in cluster.nodes {
            guard let login = node.ssh else { continue }
            let host = "\(login.user ?? "")@\(login.host.lowercased()):\(login.port ?? 22)"
            if let first = seen[host] {
                let spelled = first == node.name ? "" : " (as \(first) and \(node.name))"
                throw UsageError("the ssh host \(login) is given twice\(spelled): give each host once (N/ sets its slots)")
            }
            seen[host] = node.name
        }
        let hasSSHHosts = !seen.isEmpty
        guard hasSSHHosts else {
            if let option = args.string("ssh-command") != nil ? "ssh-command" : args.flag("ship") ? "ship" : nil {
                throw UsageError("--\(option) is for ssh hosts: give --ssh, --ssh-file or a cluster file with \"ssh\" nodes")
            }
            return
        }
        if jobCommand == nil, job != JobRegistry.scan {
            throw UsageError("the ssh hosts run the jobs this scan declares: give --job \(job)=COMMAND")
        }
    }

    /// The arguments of each host's node: the scan's (its jobs, output limit, failure rate),
    /// never its token; its slots are added per host (the login's `N/`, else its cores).
    var sshNodeArguments: [String] { Self.optionTable.spawnedArguments(for: self, excluding: ["capacity", "token-file"]) }

    /// How the links reach ssh hosts; the hosts' stderr lines go to ours.
    func sshSettings(output: ScanOutput) -> SSHSettings {
        SSHSettings(command: ssh.command, nodeArguments: sshNodeArguments, ship: ssh.ship, hostLog: { output.hostLine($0) })
    }
}
