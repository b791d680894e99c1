import Testing

/// Every suite that starts `skynet` processes runs inside this one, one test at a time, so
/// that timing stays honest on a machine of two cores.
@Suite(.serialized) enum ProcessTests {}
