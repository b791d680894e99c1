import Foundation

/// One unit of work: scanning one numbered sector of the sky.
///
/// The work is simulated: it takes `duration` seconds and returns the sector number as text.
public struct ScanTask: Codable, Sendable, Hashable, Identifiable {
    /// The longest simulated work a task may ask for, in seconds (PROTOCOL.md).
    public static let maxDuration: Double = 3600

    public let id: UUID
    /// The sector number; any integer.
    public let input: Int
    /// Seconds of simulated work; finite and within 0...3600.
    public let duration: Double

    public init(id: UUID = UUID(), input: Int, duration: Double = 1.0) {
        self.id = id
        self.input = input
        self.duration = duration
    }

    /// Whether `duration` is one the protocol accepts (finite, 0...3600).
    public static func isValidDuration(_ seconds: Double) -> Bool {
        seconds.isFinite && seconds >= 0 && seconds <= maxDuration
    }

    /// Runs the simulated scan: asks the unreliable API first, then "works" for `duration`.
    ///
    /// The work suspends instead of sleeping, so it never holds a thread of the cooperative
    /// pool: a 2-core machine runs any number of these at once.
    public func perform(using api: UnreliableAPI) async throws -> String {
        try api.action()
        if duration > 0 {
            try await Task.sleep(for: .seconds(duration))
        } else {
            try Task.checkCancellation()
        }
        return String(input)
    }
}
