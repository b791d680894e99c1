import SkyNetOptions
extension StatusCommand {
    /// Every option of `skynet status`: its parsing, usage line and help.
    static let optionTable = OptionTable<StatusCommand>(options: [
        .init("cluster", .text, usage: "[--cluster FILE]", "FILE", "the static peer list (default ./cluster.json)"),
        .init("timeout", .seconds(0.001...60), default: "2", usage: "[--timeout <default>]", "S",
              "seconds each node may take to connect and answer, <range> (default <default>)"),
        .init("token-file", .text, usage: "[--token-file FILE]", "FILE",
              "read the token from FILE (owner-readable only) instead of SKYNET_TOKEN"),
        .init("ssh-command", .text, usage: "[--ssh-command CMD]", "CMD",
              "the ssh program and options for the cluster file's ssh nodes, split",
              "into words, no shell (default ssh)"),
        .init("json", .flag, usage: "[--json]", "", "one JSON object per node instead of the table"),
        .init("watch", .flag, usage: "[--watch [--interval 1]]", "",
              "probe again every --interval until Ctrl-C: in a terminal the table is",
              "redrawn in place under a line with the time and the cluster file; piped,",
              "each round is that line and the table, then a blank line; with --json,",
              "one object per node per round, with \"round\" and \"time\""),
        .init("interval", .seconds(0.1...3600), default: "1", usage: nil, "S",
              "seconds from the start of one round to the next, <range> (default <default>);",
              "a round never starts before the last one ended"),
    ], usagePrefix: "usage: skynet status", column: 19)
}
