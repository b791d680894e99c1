extension ScanBoard {
    /// What the board shows of a system's link; the raw value is the `state` of its row in
    /// `/events` and `/state`, which the page shows as it is.
    enum RowState: String {
        case local, connecting, connected, unresponsive, draining, gone, unreachable, unauthorized, refused
        case lacksJob = "lacks job"
    }
}
